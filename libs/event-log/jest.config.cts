module.exports = {
  displayName: 'event-log',
  preset: '../../jest.preset.js',
  coverageDirectory: '../../coverage/libs/event-log',
};
