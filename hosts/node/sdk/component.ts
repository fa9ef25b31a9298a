// Loads the engine component for the Node host: the loader every Node process shares.
export { nodeComponentLoader } from '../../shared/component.js';
