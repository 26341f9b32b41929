module.exports = {
  displayName: 'council-protocol',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/council-protocol',
};
