/**
 * Nesting depth of a script's source, measured before QuickJS parses it.
 *
 * QuickJS's parser recurses once per bracket level and uses far more of the
 * host's native stack per level than its own stack check sees: a source
 * nested ~1 000 levels deep (`[[[[…`) overflowed Node's main-thread stack
 * when evaluated directly, ~320 levels when called from inside the engine's
 * WebAssembly import, and a worker thread (larger stack) parsed it fine — so
 * the same source got different codes on different hosts and the module was
 * discarded. Sources nested deeper than `sourceDepthMax` are refused with
 * `script.too-deep` before parsing, the same way everywhere.
 *
 * The scan is a small JavaScript lexer: strings, template literals (with
 * nested `${ … }`), comments and regular-expression literals are skipped, and
 * `( [ { ${` are counted. Whether a `/` starts a regular expression or is a
 * division follows the token before it (a parenthesis closing an `if`,
 * `while`, `for` or `with` head, and a brace closing a block, are followed by
 * an operand). Brackets inside a regular-expression literal are counted too
 * (QuickJS's regexp compiler also recurses on groups), and the depth returns
 * to its value before the literal after it, so misreading a division as a
 * literal can never hide brackets from the count.
 */

const controlWords = new Set(['if', 'while', 'for', 'with']);
/** Words after which an operand (so possibly a regular expression) follows. */
const operandWords = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await', 'extends']);
/** Words after which `{` opens a block. */
const blockWords = new Set(['else', 'do', 'try', 'finally']);

type Open = { kind: '(' | '[' | '{' | '${'; control: boolean; block: boolean };

function isIdentChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x24 || c === 0x5f || c === 0x23 || c === 0x5c || c >= 0x80;
}

/** Returns true when `source` nests brackets deeper than `depthMax` (stops scanning as soon as it does). */
export function sourceNestsDeeperThan(source: string, depthMax: number): boolean {
  const n = source.length;
  const stack: Open[] = [];
  let i = 0;
  let expectOperand = true;
  /** The previous significant token: a punctuator, a word, or '' at the start. */
  let prev = '';
  let prevWord = '';
  let inTemplate = false;

  const push = (kind: Open['kind'], control: boolean, block: boolean): boolean => {
    stack.push({ kind, control, block });
    return stack.length > depthMax;
  };

  while (i < n) {
    if (inTemplate) {
      // Inside a template literal's text: up to `${` or the closing backtick.
      const c = source.charCodeAt(i);
      if (c === 0x5c) i += 2;
      else if (c === 0x60) {
        inTemplate = false;
        i++;
        expectOperand = false;
        prev = '`';
      } else if (c === 0x24 && source.charCodeAt(i + 1) === 0x7b) {
        i += 2;
        if (push('${', false, false)) return true;
        inTemplate = false;
        expectOperand = true;
        prev = '${';
      } else i++;
      continue;
    }
    const c = source.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0b || c === 0x0c || c === 0xa0 || c === 0xfeff || c === 0x2028 || c === 0x2029) {
      i++;
      continue;
    }
    const d = source.charCodeAt(i + 1);
    if (c === 0x2f /* / */ && d === 0x2f) {
      while (i < n && source.charCodeAt(i) !== 0x0a && source.charCodeAt(i) !== 0x0d) i++;
      continue;
    }
    if (c === 0x2f && d === 0x2a) {
      const end = source.indexOf('*/', i + 2);
      i = end === -1 ? n : end + 2;
      continue;
    }
    if (c === 0x22 || c === 0x27) {
      i++;
      while (i < n) {
        const e = source.charCodeAt(i);
        if (e === 0x5c) i += 2;
        else if (e === c || e === 0x0a) break;
        else i++;
      }
      i++;
      expectOperand = false;
      prev = 'string';
      continue;
    }
    if (c === 0x60) {
      inTemplate = true;
      i++;
      continue;
    }
    if (c === 0x2f && expectOperand) {
      // A regular-expression literal: brackets in it are counted from the current depth.
      const base = stack.length;
      let depth = base;
      let j = i + 1;
      let inClass = false;
      let closed = false;
      while (j < n) {
        const e = source.charCodeAt(j);
        if (e === 0x0a || e === 0x0d) break;
        if (e === 0x5c) {
          j += 2;
          continue;
        }
        if (e === 0x2f && !inClass) {
          closed = true;
          break;
        }
        if (e === 0x5b) inClass = true;
        else if (e === 0x5d) inClass = false;
        if (e === 0x28 || e === 0x5b || e === 0x7b) {
          if (++depth > depthMax) return true;
        } else if ((e === 0x29 || e === 0x5d || e === 0x7d) && depth > base) depth--;
        j++;
      }
      if (closed) {
        i = j + 1;
        while (i < n && isIdentChar(source.charCodeAt(i))) i++;
        expectOperand = false;
        prev = 'regexp';
        continue;
      }
      // Not a literal after all (invalid source): read the slash as an operator.
    }
    if (isIdentChar(c)) {
      const start = i;
      while (i < n && isIdentChar(source.charCodeAt(i))) i++;
      const word = source.slice(start, i);
      const isProperty = prev === '.';
      const isNumber = c >= 0x30 && c <= 0x39;
      expectOperand = !isProperty && !isNumber && operandWords.has(word);
      prevWord = isProperty || isNumber ? '' : word;
      prev = 'word';
      continue;
    }
    if (c === 0x2e /* . */ && d >= 0x30 && d <= 0x39) {
      // A number such as .5
      i++;
      while (i < n && isIdentChar(source.charCodeAt(i))) i++;
      expectOperand = false;
      prev = 'word';
      prevWord = '';
      continue;
    }
    i++;
    switch (c) {
      case 0x28 /* ( */:
        if (push('(', prev === 'word' && controlWords.has(prevWord), false)) return true;
        expectOperand = true;
        prev = '(';
        break;
      case 0x5b /* [ */:
        if (push('[', false, false)) return true;
        expectOperand = true;
        prev = '[';
        break;
      case 0x7b /* { */: {
        const block = !expectOperand || prev === '' || prev === ')' || prev === '=>' || prev === ';' || prev === '{' || prev === '}' || (prev === 'word' && blockWords.has(prevWord));
        if (push('{', false, block)) return true;
        expectOperand = true;
        prev = '{';
        break;
      }
      case 0x29 /* ) */:
      case 0x5d /* ] */: {
        const open = stack.pop();
        expectOperand = c === 0x29 && open !== undefined && open.control;
        prev = c === 0x29 ? ')' : ']';
        break;
      }
      case 0x7d /* } */: {
        const open = stack.pop();
        if (open?.kind === '${') {
          inTemplate = true;
          break;
        }
        expectOperand = open !== undefined && open.block;
        prev = '}';
        break;
      }
      case 0x2e /* . */:
        if (source.charCodeAt(i) === 0x2e && source.charCodeAt(i + 1) === 0x2e) {
          i += 2;
          expectOperand = true;
          prev = '...';
        } else {
          expectOperand = false;
          prev = '.';
        }
        break;
      case 0x3f /* ? */:
        if (d === 0x2e && !(source.charCodeAt(i + 1) >= 0x30 && source.charCodeAt(i + 1) <= 0x39)) {
          i++;
          expectOperand = false;
          prev = '.';
        } else {
          expectOperand = true;
          prev = '?';
        }
        break;
      case 0x2b /* + */:
      case 0x2d /* - */:
        if (d === c) {
          // ++ and -- leave the expectation as it was (prefix: operand follows; postfix: operator).
          i++;
          prev = c === 0x2b ? '++' : '--';
        } else {
          expectOperand = true;
          prev = String.fromCharCode(c);
        }
        break;
      case 0x3d /* = */:
        if (d === 0x3e) {
          i++;
          prev = '=>';
        } else prev = '=';
        expectOperand = true;
        break;
      case 0x3b /* ; */:
        expectOperand = true;
        prev = ';';
        break;
      default:
        expectOperand = true;
        prev = String.fromCharCode(c);
    }
  }
  return false;
}
