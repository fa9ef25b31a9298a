// Loads the engine component for the router host. The loader of Node processes imports nothing
// but Node built-ins (node:fs, node:v8), so the router shares it: same binary, same V8 flag.
export { compileComponentAhead, nodeComponentLoader as routerComponentLoader } from '../shared/component.js';
