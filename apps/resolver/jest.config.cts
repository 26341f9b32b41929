module.exports = {
  displayName: 'resolver',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/resolver',
};
