module.exports = {
  displayName: 'escalation',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/apps/escalation',
};
