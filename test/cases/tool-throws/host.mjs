export default { tools: { bad: () => { throw new TypeError('cannot read properties of undefined'); } } };
