module.exports = {
  displayName: 'intake',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/intake',
};
