module.exports = {
  displayName: 'cli',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/cli',
};
