// No approval handler: the run waits for a person.
export default {};
