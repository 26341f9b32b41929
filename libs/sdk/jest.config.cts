module.exports = {
  displayName: 'sdk',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/sdk',
};
