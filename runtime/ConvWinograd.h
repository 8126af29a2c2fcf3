#pragma once
/// \file conv2d's Winograd path (private to runtime/): a 3x3, stride-1 f32
/// convolution as F(2x2, 3x3), which needs 16 multiply-adds per 2x2 output
/// tile and input channel where the direct form needs 36. Each 4x4 input
/// tile is transformed (B^T d B), the 16 transformed planes are multiplied
/// by the transformed weights (G g G^T) as 16 GEMMs over channels, and the
/// products are transformed back (A^T m A). The transforms only add,
/// subtract and halve, so the result differs from the direct sum by a few
/// roundings of the partial sums (a relative error a few times f32's, as in
/// cuDNN's and NNPACK's Winograd convolutions).

#include <cstdint>

namespace tsl::rt {

/// The sizes of one Winograd convolution of an image stored [C, Hs, Ws]
/// (padding already in it) into [O, Hs - 2, Ws - 2].
struct WinogradShape {
  int64_t C, O, Hs, Ws;
  int64_t outH() const { return Hs - 2; }
  int64_t outW() const { return Ws - 2; }
  int64_t tilesH() const { return (outH() + 1) / 2; }
  int64_t tilesW() const { return (outW() + 1) / 2; }
  /// Tile rows transformed at a time: the band's V and M stay near 4 MiB
  int64_t bandRows() const;
  /// Floats of scratch winogradImage needs.
  int64_t scratchFloats() const;
};

/// Whether the Winograd path pays for a 3x3 stride-1 conv with \p C input
/// and \p O output channels and \p tiles 2x2 output tiles per image
/// (measured against the direct path on 1 and 2 threads: with 16 channels
/// the transforms cost more than the multiplies saved, and below about 144
/// tiles the 16 GEMMs are too narrow: 14x14 outputs at 256 channels ran
/// 1.8x slower).
bool winogradPays(int64_t C, int64_t O, int64_t tiles);

/// The transformed weights U[16][O][C] of w[O, C, 3, 3] (16 * O * C floats).
void winogradWeights(const WinogradShape &s, const float *w, float *U);

/// out[O, outH * outW] = conv3x3(image) + bias[o] (bias may be null), with
/// \p U from winogradWeights and \p scratch of s.scratchFloats() floats.
/// Each output's sums come in an order fixed by the shape alone. False
/// when the GEMM's own scratch could not be allocated.
bool winogradImage(const WinogradShape &s, const float *image, const float *U,
                   const float *bias, float *scratch, float *out);

} // namespace tsl::rt
