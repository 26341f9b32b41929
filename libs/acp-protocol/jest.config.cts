module.exports = {
  displayName: 'acp-protocol',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/acp-protocol',
};
