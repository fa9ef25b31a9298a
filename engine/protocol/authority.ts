/** Who a run acts for, and the capabilities that grants (`tool:*`, `agent:writer`, `*`). */
export interface Authority {
  id: string;
  scopes: string[];
}
