// LangGraph JS, durability "sync": each step's checkpoint is committed before the next step starts
// (the like-for-like row against engines that commit before continuing).
import { makeLangGraph } from './langgraph.mjs';

export default makeLangGraph({ durability: 'sync', name: 'langgraph-sync' });
