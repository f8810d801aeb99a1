#include "ops/rope.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace kvaudit {

namespace {
// YaRN's blend (transformers _compute_yarn_parameters, llama.cpp ggml-cpu ops.cpp rope_yarn with
// ext_factor 1): the correction dim of r rotations is d·ln(L/(2πr)) / (2·ln base) for the
// original context L; pair i keeps its original frequency by ramp(i) = 1 − clamp((i − lo)/(hi − lo))
// and is interpolated (÷ factor) by the rest.
void YarnBlend(const RopeParams& p, int head_dim, std::vector<float>& inv) {
  const double d = head_dim, base = p.theta, ctx = p.original_max_position_embeddings;
  auto corr_dim = [&](double rotations) { return d * std::log(ctx / (rotations * 2 * M_PI)) / (2 * std::log(base)); };
  double lo = corr_dim(p.beta_fast), hi = corr_dim(p.beta_slow);
  if (p.yarn_round_dims) lo = std::floor(lo), hi = std::ceil(hi);
  // Both clamp to [0, d − 1], rounded or not (find_correction_range, ggml_rope_yarn_corr_dims).
  lo = std::max(0.0, lo);
  hi = std::min(d - 1, hi);
  const float lo_f = static_cast<float>(lo), span = std::max(0.001f, static_cast<float>(hi - lo));
  const float factor = static_cast<float>(p.factor);
  for (size_t i = 0; i < inv.size(); ++i) {
    const float y = (static_cast<float>(i) - lo_f) / span;
    const float extrapolate = 1.0f - std::min(1.0f, std::max(0.0f, y));
    inv[i] = (inv[i] / factor) * (1.0f - extrapolate) + inv[i] * extrapolate;
  }
}
}  // namespace

const char* RopeTypeName(RopeType t) {
  switch (t) {
    case RopeType::kDefault: return "default";
    case RopeType::kLinear: return "linear";
    case RopeType::kLlama3: return "llama3";
    case RopeType::kYarn: return "yarn";
    case RopeType::kLongRope: return "longrope";
  }
  return "?";
}

RopeParams RopeParams::ForContext(int context) const {
  RopeParams p = *this;
  if (is_longrope()) p.freq_divisors = UsesLongFactors(context) ? long_factors : short_factors;
  return p;
}

std::vector<float> RopeInvFreq(const RopeParams& p, int head_dim) {
  head_dim = p.RotatedDims(head_dim);  // frequencies over the rotated dims only
  const int half = head_dim / 2;
  std::vector<float> inv(half);
  for (int i = 0; i < half; ++i) {
    // 1 / base ** (arange(0, dim, 2).float() / dim), each step rounded to f32 like torch.
    const float expo = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const float powv = static_cast<float>(std::pow(p.theta, static_cast<double>(expo)));
    inv[i] = 1.0f / powv;
  }
  KV_CHECK_MSG(!p.is_longrope() || !p.freq_divisors.empty(), "LongRoPE needs RopeParams::ForContext");
  if (!p.freq_divisors.empty()) {
    KV_CHECK(static_cast<int>(p.freq_divisors.size()) == half);
    for (int i = 0; i < half; ++i) inv[i] = inv[i] / p.freq_divisors[i];
    return inv;
  }
  if (p.type == RopeType::kLinear) {
    for (float& f : inv) f = f / static_cast<float>(p.factor);
  } else if (p.type == RopeType::kYarn) {
    YarnBlend(p, head_dim, inv);
  } else if (p.type == RopeType::kLlama3) {
    const float factor = static_cast<float>(p.factor);
    const float lo = static_cast<float>(p.low_freq_factor), hi = static_cast<float>(p.high_freq_factor);
    const float old_ctx = static_cast<float>(p.original_max_position_embeddings);
    const float low_freq_wavelen = old_ctx / lo, high_freq_wavelen = old_ctx / hi;
    for (float& f : inv) {
      const float wavelen = static_cast<float>(2 * M_PI) / f;
      float g = wavelen > low_freq_wavelen ? f / factor : f;
      if (!(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen)) {
        const float smooth = (old_ctx / wavelen - lo) / (hi - lo);
        g = (1 - smooth) * g / factor + smooth * g;
      }
      f = g;
    }
  }
  return inv;
}

RopeTable::RopeTable(const RopeParams& p, int head_dim, int max_pos, RopeArithmetic arithmetic)
    : head_dim_(head_dim), rot_(p.RotatedDims(head_dim)) {
  KV_CHECK(head_dim % 2 == 0 && rot_ % 2 == 0 && rot_ > 0 && rot_ <= head_dim && max_pos > 0);
  inv_ = RopeInvFreq(p, head_dim);
  mscale_ = static_cast<float>(p.attn_factor);
  ggml_ = arithmetic == RopeArithmetic::kGgml && p.type != RopeType::kYarn;
  base_ = static_cast<float>(p.theta);
  freq_scale_ = p.type == RopeType::kLinear ? 1.0f / static_cast<float>(p.factor) : 1.0f;
  divisors_ = p.freq_divisors;
  Extend(max_pos);
}

namespace {

// ggml_rope_cache_init and rope_yarn with ext_factor 0, one position (RopeArithmetic::kGgml).
void GgmlAngles(int pos, float base, float freq_scale, const std::vector<float>& divisors, float mscale, int dims,
                float* c, float* s) {
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(dims));  // powf
  float theta = static_cast<float>(pos);
  for (int i = 0; i < dims / 2; ++i) {
    const float ff = divisors.empty() ? 1.0f : divisors[i];
    const float angle = freq_scale * (theta / ff);
    c[i] = std::cos(angle) * mscale;  // cosf, sinf
    s[i] = std::sin(angle) * mscale;
    theta *= theta_scale;
  }
}

}  // namespace

void RopeTable::Extend(int max_pos) {
  KV_CHECK(head_dim_ > 0);
  if (max_pos <= max_pos_) return;
  const int half = rot_ / 2;
  cos_.resize(static_cast<size_t>(max_pos) * half);
  sin_.resize(cos_.size());
  for (int pos = max_pos_; pos < max_pos; ++pos) {
    if (ggml_) {
      const size_t at = static_cast<size_t>(pos) * half;
      GgmlAngles(pos, base_, freq_scale_, divisors_, mscale_, rot_, &cos_[at], &sin_[at]);
      continue;
    }
    for (int i = 0; i < half; ++i) {
      const float a = static_cast<float>(pos) * inv_[i];
      cos_[static_cast<size_t>(pos) * half + i] = static_cast<float>(std::cos(static_cast<double>(a))) * mscale_;
      sin_[static_cast<size_t>(pos) * half + i] = static_cast<float>(std::sin(static_cast<double>(a))) * mscale_;
    }
  }
  max_pos_ = max_pos;
}

void RopeTable::Apply(float* x, int n_tok, int n_heads, int pos0) const {
  const int half = rot_ / 2;  // dims [rot_, head_dim_) pass through
  KV_CHECK(pos0 >= 0 && pos0 + n_tok <= max_pos_);
  for (int t = 0; t < n_tok; ++t) {
    const float* c = cos_.data() + static_cast<size_t>(pos0 + t) * half;
    const float* s = sin_.data() + static_cast<size_t>(pos0 + t) * half;
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (static_cast<size_t>(t) * n_heads + h) * head_dim_;
      if (ggml_) {
        for (int i = 0; i < half; ++i) {
          const float x0 = v[i], x1 = v[i + half];
          v[i] = std::fma(x0, c[i], -(x1 * s[i]));
          v[i + half] = std::fma(x0, s[i], x1 * c[i]);
        }
        continue;
      }
      for (int i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = x0 * c[i] - x1 * s[i];
        v[i + half] = x1 * c[i] + x0 * s[i];
      }
    }
  }
}

}  // namespace kvaudit
