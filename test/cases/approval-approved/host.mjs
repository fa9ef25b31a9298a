export default { approvals: (request) => ({ approved: true, by: 'release-bot' }) };
