#!/usr/bin/env python3
"""Writes the GPT-2 language model (pre-norm decoder blocks, D=768, 12 heads,
MLP 3072, causal self-attention with biases) that bench/loop_compile.sh
compiles, in one of two forms over the same parameters (each weight stacked
over the L layers: w_qkv f32[L, D, 3*D], ...):

  gpt2_gen.py OUT.tsl --form loop                 `for l in 0..L { h = block(h, w_qkv[l], ...); }`
  gpt2_gen.py OUT.tsl --form unrolled --layers N  N hand-written lines `h = block(h, w_qkv[i], ...);`
  [--calls CALLS --layers N --batch B --seq S]    a `tslc run --calls` file (zero weights)

The loop form's L is a dynamic dim (one compile for every depth); the
unrolled form's is the constant N. Python standard library only."""
import argparse

D, HEADS, F = 768, 12, 3072

# (name, shape without the leading L) of each block's stacked weights.
WEIGHTS = [('ln1_w', 'D'), ('ln1_b', 'D'), ('w_qkv', 'D, 3 * D'), ('b_qkv', '3 * D'),
           ('w_o', 'D, D'), ('b_o', 'D'), ('ln2_w', 'D'), ('ln2_b', 'D'),
           ('w_fc', 'D, F'), ('b_fc', 'F'), ('w_pr', 'F, D'), ('b_pr', 'D')]

BLOCK = '''
/// One GPT-2 block: x + attn(ln1(x)), then + mlp(ln2(.)), causal.
fn block(x: f32[B, S, D], ln1_w: f32[D], ln1_b: f32[D], w_qkv: f32[D, 3 * D],
         b_qkv: f32[3 * D], w_o: f32[D, D], b_o: f32[D], ln2_w: f32[D],
         ln2_b: f32[D], w_fc: f32[D, F], b_fc: f32[F], w_pr: f32[F, D],
         b_pr: f32[D], mask: f32[S, S]) -> f32[B, S, D] {
  let qkv = nn.layer_norm(x, ln1_w, ln1_b) @ w_qkv + b_qkv;
  let q = nn.split_heads(qkv[:, :, 0:D], 12);
  let k = nn.split_heads(qkv[:, :, D:2 * D], 12);
  let v = nn.split_heads(qkv[:, :, 2 * D:3 * D], 12);
  let h = x + nn.merge_heads(nn.attention(q, k, v, mask)) @ w_o + b_o;
  let m = gelu(nn.layer_norm(h, ln2_w, ln2_b) @ w_fc + b_fc);
  return h + m @ w_pr + b_pr;
}
'''


def source(form, layers):
    lines = ['import nn;', 'dim B: dynamic in 1..64;', 'dim S: dynamic in 1..1024;',
             f'dim D = {D};', f'dim F = {F};']
    lines.append('dim L: dynamic in 0..1024;' if form == 'loop' else f'dim L = {layers};')
    lines.append(BLOCK)
    params = ',\n         '.join(f'{n}: f32[L, {s}]' for n, s in WEIGHTS)
    lines.append(f'fn gpt2(x: f32[B, S, D],\n         {params},\n'
                 '         lnf_w: f32[D], lnf_b: f32[D]) -> f32[B, S, D] {')
    lines.append('  let i = reshape(arange(S), [S, 1]);')
    lines.append('  let j = reshape(arange(S), [1, S]);')
    lines.append('  let mask = where(j > i, full([S, S], -1e9), zeros([S, S]));')
    lines.append('  var h = x;')
    args = lambda l: ', '.join(f'{n}[{l}]' for n, _ in WEIGHTS)
    if form == 'loop':
        lines.append('  for l in 0..L {')
        lines.append(f'    h = block(h, {args("l")}, mask);')
        lines.append('  }')
    else:
        for i in range(layers):
            lines.append(f'  h = block(h, {args(i)}, mask);')
    lines.append('  return nn.layer_norm(h, lnf_w, lnf_b);')
    lines.append('}')
    return '\n'.join(lines) + '\n'


def calls(layers, batch, seq):
    size = {'D': str(D), 'F': str(F), '3 * D': str(3 * D)}
    shape = lambda s: ','.join(size[t.strip()] for t in s.split(','))
    args = [f'x=f32[{batch},{seq},{D}]']
    args += [f'{n}=f32[{layers},{shape(s)}]:zeros' for n, s in WEIGHTS]
    args += [f'lnf_w=f32[{D}]:ones', f'lnf_b=f32[{D}]:zeros']
    return ' '.join(args) + '\n'


def main():
    p = argparse.ArgumentParser()
    p.add_argument('out')
    p.add_argument('--form', choices=['loop', 'unrolled'], default='loop')
    p.add_argument('--layers', type=int, default=48)
    p.add_argument('--calls')
    p.add_argument('--batch', type=int, default=1)
    p.add_argument('--seq', type=int, default=8)
    a = p.parse_args()
    with open(a.out, 'w') as f:
        f.write(source(a.form, a.layers))
    if a.calls:
        with open(a.calls, 'w') as f:
            f.write(calls(a.layers, a.batch, a.seq))


if __name__ == '__main__':
    main()
