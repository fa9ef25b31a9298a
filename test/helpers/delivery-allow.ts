// Adds a host:port to this process's delivery allow-list (`ADW_DELIVERY_ALLOW_TARGETS`); child
// processes started afterwards inherit it with the environment.
export function allowDeliveryTarget(hostPort: string): void {
  const now = (process.env.ADW_DELIVERY_ALLOW_TARGETS ?? '').split(',').filter((s) => s.length > 0);
  if (!now.includes(hostPort)) now.push(hostPort);
  process.env.ADW_DELIVERY_ALLOW_TARGETS = now.join(',');
}
