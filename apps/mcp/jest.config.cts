module.exports = {
  displayName: 'mcp',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/mcp',
};
