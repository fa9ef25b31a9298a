export default { tools: { echo: (i) => ({ text: i.text }) } };
