// A small syntax highlighter for code blocks: comments, strings, numbers
// and keywords of a few languages (Go, JavaScript and TypeScript, Python,
// shell, JSON, Rust, C-like languages, YAML) and the lines of a diff. It
// returns text nodes and spans whose only attribute is a class this
// module chooses; the code itself is always text. One pass of one regular
// expression per block: linear in the code's length. Blocks over
// MAX_CODE characters, and unknown languages, show as plain text.

import { h } from './dom.js';

const MAX_CODE = 200000;

const words = (s) => new Set(s.split(/\s+/).filter(Boolean));

const C_COMMENT = String.raw`\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)`;
const HASH_COMMENT = String.raw`#[^\n]*`;
const DQ = String.raw`"(?:[^"\\\n]|\\.)*"?`;
const SQ = String.raw`'(?:[^'\\\n]|\\.)*'?`;
const BT = String.raw`\x60(?:[^\x60\\]|\\[\s\S])*\x60?`;
const NUM = String.raw`\b(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)\b`;
const WORD = String.raw`[A-Za-z_$][\w$]*`;

const LANGS = {};
function lang(names, def) {
  const re = new RegExp(`(${def.comment})|(${def.string})|(${NUM})|(${WORD})`, 'gy');
  for (const n of names.split(' ')) LANGS[n] = { re, kw: words(def.kw), lit: words(def.lit || 'true false null') };
}

lang('go golang', {
  comment: C_COMMENT, string: `${DQ}|${BT}|${SQ}`,
  kw: 'break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var any bool byte error int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 float64 string rune complex64 complex128',
  lit: 'true false nil iota',
});
lang('js javascript jsx mjs ts typescript tsx', {
  comment: C_COMMENT, string: `${DQ}|${SQ}|${BT}`,
  kw: 'async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield interface type enum implements private public protected readonly declare namespace as',
  lit: 'true false null undefined NaN Infinity',
});
lang('py python', {
  comment: HASH_COMMENT, string: `"""[\\s\\S]*?(?:"""|$)|'''[\\s\\S]*?(?:'''|$)|${DQ}|${SQ}`,
  kw: 'and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case self',
  lit: 'True False None',
});
lang('sh bash shell zsh console shell-session', {
  comment: String.raw`(?<![^\s;])#[^\n]*`, string: `${DQ}|'[^']*'?`,
  kw: 'if then else elif fi for while until do done case esac in function return exit export local readonly set unset shift source alias cd echo printf exec eval trap',
  lit: 'true false',
});
lang('json jsonc json5', { comment: C_COMMENT, string: DQ, kw: '', lit: 'true false null' });
lang('rust rs', {
  comment: C_COMMENT, string: DQ,
  kw: 'as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Some None Ok Err',
  lit: 'true false',
});
lang('c h cpp c++ cc hpp java kotlin kt swift cs csharp', {
  comment: C_COMMENT, string: `${DQ}|${SQ}`,
  kw: 'auto break case catch char class const continue default delete do double else enum extern final float for goto if import include int long namespace new package private protected public return short signed sizeof static struct switch template this throw try typedef union unsigned using virtual void volatile while fun val var let func interface extends implements override',
  lit: 'true false null nullptr NULL nil',
});
lang('yaml yml toml ini', {
  comment: HASH_COMMENT, string: `${DQ}|${SQ}`, kw: '', lit: 'true false null yes no on off',
});

const CLS = ['tok-com', 'tok-str', 'tok-num'];

// highlight returns the nodes of code in language name.
export function highlight(name, code) {
  if (code.length > MAX_CODE) return [code];
  if (name === 'diff' || name === 'patch') return diff(code);
  const l = LANGS[name];
  if (!l) return [code];
  const out = [];
  const re = l.re;
  let plain = '';
  let i = 0;
  while (i < code.length) {
    re.lastIndex = i;
    const m = re.exec(code);
    if (!m || m[0] === '') {
      plain += code[i];
      i++;
      continue;
    }
    let cls = null;
    if (m[1] != null) cls = CLS[0];
    else if (m[2] != null) cls = CLS[1];
    else if (m[3] != null) cls = CLS[2];
    else if (l.kw.has(m[0])) cls = 'tok-kw';
    else if (l.lit.has(m[0])) cls = 'tok-lit';
    if (cls) {
      if (plain) out.push(plain);
      plain = '';
      out.push(h('span', { class: cls }, m[0]));
    } else {
      plain += m[0];
    }
    i += m[0].length;
  }
  if (plain) out.push(plain);
  return out;
}

function diff(code) {
  return code.split('\n').flatMap((line, k) => {
    let cls = null;
    if (/^(\+\+\+|---|diff |index )/.test(line)) cls = 'tok-meta';
    else if (line.startsWith('@@')) cls = 'tok-hunk';
    else if (line.startsWith('+')) cls = 'tok-add';
    else if (line.startsWith('-')) cls = 'tok-del';
    const node = cls ? h('span', { class: cls }, line) : line;
    return k ? ['\n', node] : [node];
  });
}
