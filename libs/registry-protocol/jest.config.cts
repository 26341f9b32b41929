module.exports = {
  displayName: 'registry-protocol',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/registry-protocol',
};
