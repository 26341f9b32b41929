module.exports = {
  displayName: 'audit',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/audit',
};
