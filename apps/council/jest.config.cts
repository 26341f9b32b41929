module.exports = {
  displayName: 'council',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/council',
};
