// A node's config as a form, generated from its node type's config schema (GET
// /v1/console/node-types). The template JSON in the editor stays the only model: a field's change
// replaces the bytes of that one config value in the text (or of the node's config when the value
// is new), so every untouched part of the text keeps its bytes. Fields are made for the schema's
// string, number, integer and boolean properties (an `enum` is a select); other values are
// edited in the JSON.
import { api, el } from './api.js';

interface NodeType {
  uses: string;
  label: string;
  /** A type the host registered; `effect` says whether an unknown outcome of its call may be retried. */
  custom?: true;
  effect?: string;
  configSchema: { properties?: Record<string, { type?: string; enum?: unknown[]; description?: string }>; required?: string[] };
}

/** Where each value of a JSON text starts and ends, by its JSON pointer. */
export function valueSpans(text: string): Map<string, [number, number]> {
  const spans = new Map<string, [number, number]>();
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const str = (): string => {
    const start = i;
    i++;
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (pointer: string): void => {
    ws();
    const start = i;
    if (text[i] === '{') {
      i++;
      ws();
      while (text[i] !== '}') {
        const key = str();
        ws();
        i++; // ':'
        value(`${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
        ws();
        if (text[i] === ',') i++, ws();
      }
      i++;
    } else if (text[i] === '[') {
      i++;
      ws();
      for (let n = 0; text[i] !== ']'; n++) {
        value(`${pointer}/${n}`);
        ws();
        if (text[i] === ',') i++, ws();
      }
      i++;
    } else if (text[i] === '"') str();
    else while (i < text.length && !/[\s,}\]]/.test(text[i])) i++;
    spans.set(pointer, [start, i]);
  };
  value('');
  return spans;
}

/** The editor's text with the value at `pointer` (or, when absent, the object holding it) replaced. */
export function setConfigValue(text: string, nodeIndex: number, key: string, next: unknown): string {
  const spans = valueSpans(text);
  const at = `/spec/nodes/${nodeIndex}/config`;
  const own = spans.get(`${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  if (own) return text.slice(0, own[0]) + JSON.stringify(next) + text.slice(own[1]);
  const template = JSON.parse(text) as { spec: { nodes: { config?: Record<string, unknown> }[] } };
  const config = { ...(template.spec.nodes[nodeIndex].config ?? {}), [key]: next };
  const holder = spans.get(at) ?? spans.get(`/spec/nodes/${nodeIndex}`)!;
  if (spans.has(at)) return text.slice(0, holder[0]) + JSON.stringify(config) + text.slice(holder[1]);
  // No config yet: added as the node object's last member.
  const head = text.slice(0, holder[1] - 1).trimEnd();
  return `${head}, "config": ${JSON.stringify(config)}${text.slice(head.length)}`;
}

/** The node form under the editor; `edited` is called after the editor's text changed. */
export async function nodeForm(editor: HTMLTextAreaElement, edited: () => void): Promise<HTMLElement> {
  const { body } = await api<{ nodeTypes: NodeType[] }>('v1/console/node-types');
  const types = new Map(body.nodeTypes.map((t) => [t.uses, t]));
  const pick = el('select', { id: 'node-pick' });
  const fields = el('div', { id: 'node-fields', class: 'node-fields' });
  const box = el('div', { id: 'node-form', class: 'node-form' }, el('label', {}, 'Node', pick), fields);

  function nodes(): { id: string; uses: string; config?: Record<string, unknown> }[] {
    try {
      return (JSON.parse(editor.value) as { spec?: { nodes?: { id: string; uses: string; config?: Record<string, unknown> }[] } }).spec?.nodes ?? [];
    } catch {
      return [];
    }
  }

  function showPicker(): void {
    const chosen = pick.value;
    pick.replaceChildren(...nodes().map((n) => el('option', { value: n.id }, `${n.id} (${n.uses})`)));
    if (chosen && [...pick.options].some((o) => o.value === chosen)) pick.value = chosen;
  }

  function showFields(): void {
    const list = nodes();
    const index = list.findIndex((n) => n.id === pick.value);
    const node = list[index];
    const type = node ? types.get(node.uses) : undefined;
    const schema = type?.configSchema;
    fields.replaceChildren();
    if (type?.custom) fields.append(el('p', { class: 'node-effect' }, `${type.label}: defined by this host, effect ${type.effect ?? 'unknown'}`));
    if (!node || !schema?.properties) return;
    for (const [key, prop] of Object.entries(schema.properties)) {
      const current = node.config?.[key];
      let input: HTMLInputElement | HTMLSelectElement;
      if (prop.enum) {
        input = el('select', {}, el('option', { value: '' }, '—'), ...prop.enum.map((v) => el('option', { value: JSON.stringify(v) }, String(v))));
        input.value = current !== undefined ? JSON.stringify(current) : '';
      } else if (prop.type === 'boolean') {
        input = el('input', { type: 'checkbox' });
        input.checked = current === true;
      } else if (prop.type === 'string' || prop.type === 'number' || prop.type === 'integer') {
        input = el('input', { type: prop.type === 'string' ? 'text' : 'number' });
        input.value = current !== undefined ? String(current) : '';
      } else continue;
      input.dataset.key = key;
      input.addEventListener('change', () => {
        const v = prop.enum ? (input.value ? JSON.parse(input.value) : undefined) : prop.type === 'boolean' ? (input as HTMLInputElement).checked : prop.type === 'string' ? input.value : Number(input.value);
        if (v === undefined) return;
        editor.value = setConfigValue(editor.value, index, key, v);
        edited();
      });
      fields.append(el('label', { title: prop.description }, `${key}${schema.required?.includes(key) ? ' *' : ''}`, input));
    }
  }

  pick.addEventListener('change', showFields);
  editor.addEventListener('input', () => {
    showPicker();
    showFields();
  });
  showPicker();
  showFields();
  return box;
}
