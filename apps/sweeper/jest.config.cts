module.exports = {
  displayName: 'sweeper',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/sweeper',
};
