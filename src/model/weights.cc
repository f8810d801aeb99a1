#include "model/weights.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>

#include "io/dequantize.h"
#include "io/gguf.h"
#include "io/mapped_file.h"
#include "io/safetensors.h"

namespace kvaudit {

uint64_t ModelWeights::bytes() const {
  uint64_t b = embed.bytes() + final_norm.bytes() + lm_head.bytes();
  for (const LayerWeights& l : layers) {
    for (const AlignedBuffer* p : {&l.attn_norm, &l.bqkv, &l.q_norm, &l.k_norm, &l.bo, &l.ffn_norm}) b += p->bytes();
    for (const WeightMatrix* p : {&l.wqkv, &l.wo, &l.w_gate_up, &l.w_down, &l.router}) b += p->bytes();
    for (const ExpertWeights& e : l.experts) b += e.gate_up.bytes() + e.down.bytes();
  }
  return b;
}

std::string ModelWeights::storage_summary() const {
  std::map<std::string, int> seen;
  auto add = [&](const WeightMatrix& m) {
    for (const WeightView& p : m.parts()) {
      if (p.rows * p.cols > 0) seen[QuantTypeName(p.type)] = 1;
    }
  };
  add(embed);
  add(lm_head);
  for (const LayerWeights& l : layers) {
    for (const WeightMatrix* p : {&l.wqkv, &l.wo, &l.w_gate_up, &l.w_down, &l.router}) add(*p);
    for (const ExpertWeights& e : l.experts) add(e.gate_up), add(e.down);
  }
  std::string r;
  for (const auto& [name, one] : seen) r += (r.empty() ? "" : "+") + name;
  return r;
}

namespace {
// Row permutation of UnpermuteGgufQk on rows of `row_bytes` bytes (any element type).
void UnpermuteRows(uint8_t* w, int n_head, int head_dim, size_t row_bytes) {
  const int half = head_dim / 2;
  std::vector<uint8_t> tmp(static_cast<size_t>(head_dim) * row_bytes);  // one head
  for (int h = 0; h < n_head; ++h) {
    uint8_t* head = w + static_cast<size_t>(h) * head_dim * row_bytes;
    std::memcpy(tmp.data(), head, tmp.size());
    for (int j = 0; j < half; ++j) {
      for (int t = 0; t < 2; ++t) {
        std::memcpy(head + static_cast<size_t>(t * half + j) * row_bytes,
                    tmp.data() + static_cast<size_t>(2 * j + t) * row_bytes, row_bytes);
      }
    }
  }
}
}  // namespace

// transformers convert_moe_packed_tensors (integrations/mxfp4.py @0189b1d0): an HF block's element
// 2k is byte k's low nibble and 2k+1 its high nibble, scaled by 2^(scale − 127). ggml's block_mxfp4
// (ggml-common.h, quant/mxfp4.cc): the E8M0 byte, then byte j holds element j (low) and j+16 (high),
// scaled by the same power (its doubled E2M1 table times 2^(e − 128)). The codes are the same fp4.
void RepackHfMxfp4Block(const uint8_t* hf, uint8_t scale, uint8_t* ggml) {
  auto code = [hf](int k) { return k % 2 == 0 ? hf[k / 2] & 0x0F : hf[k / 2] >> 4; };
  ggml[0] = scale;
  for (int j = 0; j < 16; ++j) ggml[1 + j] = static_cast<uint8_t>(code(j) | code(j + 16) << 4);
}

void UnpermuteGgufQk(float* w, int n_head, int head_dim, int64_t cols) {
  UnpermuteRows(reinterpret_cast<uint8_t*>(w), n_head, head_dim, static_cast<size_t>(cols) * sizeof(float));
}

namespace {

// Resolves names in one file format and copies tensors, converted to f32, into place.
class Loader {
 public:
  Loader(std::function<const TensorView*(const std::string&)> find, std::string source, std::string hint, bool in_place)
      : find_(std::move(find)), source_(std::move(source)), hint_(std::move(hint)), in_place_(in_place) {}

  bool Has(const std::string& name) const { return find_(name) != nullptr; }
  const TensorView* Find(const std::string& name) const { return find_(name); }
  const std::string& source() const { return source_; }
  // Matrices are read in place from the mapped file (GGUF), not copied.
  bool in_place() const { return in_place_; }

  // Tensor `name` [rows, cols] appended to m as a part read in place, rows reordered by row_map
  // (empty: as stored). A dtype the kernels cannot read, or data misaligned for its element size,
  // is converted to f32 into w.converted instead (still a part of m).
  Status AddPart(const std::string& name, const std::vector<int64_t>& shape, WeightMatrix& m,
                 std::vector<int32_t> row_map, ModelWeights& w) const {
    KV_ASSIGN_OR_RETURN(WeightView v, View(name, shape, w));
    m.AddExternalPart(v, std::move(row_map));
    return Status::Ok();
  }

  // Tensor `name` of `shape` (2-D, or 3-D [n, rows, cols] for stacked experts) as one view of
  // [numel / cols, cols]: in place when in_place() and the kernels read its dtype at its alignment,
  // else an f32 copy in w.converted.
  Expected<WeightView> View(const std::string& name, const std::vector<int64_t>& shape, ModelWeights& w) const {
    KV_RETURN_IF_ERROR(Check(name, shape));
    const TensorView* t = find_(name);
    const int64_t cols = shape.back(), rows = t->numel() / std::max<int64_t>(cols, 1);
    const std::optional<QuantType> type = QuantTypeOfDType(t->dtype);
    const size_t align = !type || IsBlockType(*type) ? 1 : QuantTypeBytes(*type);
    if (in_place_ && type && reinterpret_cast<uintptr_t>(t->data) % align == 0) {
      const int block = GetQuantTraits(*type).block_elems;
      if (cols % block != 0) {
        return BadInput(source_ + ": tensor '" + name + "' has rows of " + std::to_string(cols) +
                        " elements, not whole " + QuantTypeName(*type) + " blocks of " + std::to_string(block) +
                        "; hint: the file is corrupt");
      }
      const uint64_t want = static_cast<uint64_t>(rows) * QuantRowBytes(*type, cols);
      if (t->nbytes != want) {
        return BadInput(source_ + ": tensor '" + name + "' has " + std::to_string(t->nbytes) + " bytes, expected " +
                        std::to_string(want) + "; hint: the file is truncated or its header is wrong");
      }
      w.source_dtypes[std::string(GetDTypeInfo(t->dtype).name)] += t->numel();
      w.n_params += t->numel();
      return WeightView{t->data, *type, rows, cols, nullptr};
    }
    w.converted.push_back(std::make_unique<AlignedBuffer>());
    AlignedBuffer& f = *w.converted.back();
    f.Resize(t->numel());
    KV_RETURN_IF_ERROR(Load(name, shape, f.data(), w));
    return WeightView{f.data(), QuantType::kF32, rows, cols, nullptr};
  }

  // Checks dtype and exact shape (outermost first), then dequantizes into dst.
  Status Load(const std::string& name, const std::vector<int64_t>& shape, float* dst, ModelWeights& w) const {
    KV_RETURN_IF_ERROR(Check(name, shape));
    const TensorView* t = find_(name);
    KV_RETURN_IF_ERROR(DequantizeToF32(*t, dst));
    w.source_dtypes[std::string(GetDTypeInfo(t->dtype).name)] += t->numel();
    w.n_params += t->numel();
    return Status::Ok();
  }

  // Presence, exact shape (outermost first) and convertibility of tensor `name`.
  Status Check(const std::string& name, const std::vector<int64_t>& shape) const {
    const TensorView* t = find_(name);
    if (!t) return BadInput(source_ + ": missing tensor '" + name + "'; hint: " + hint_);
    if (t->shape != shape) {
      return BadInput(source_ + ": tensor '" + name + "' has shape " + ShapeStr(t->shape) + ", expected " +
                      ShapeStr(shape) +
                      "; hint: the tensor does not match config (check hidden_size, heads, head_dim, "
                      "intermediate_size, vocab_size)");
    }
    const DTypeInfo& info = GetDTypeInfo(t->dtype);
    if (!info.float_convertible) {
      return BadInput(source_ + ": tensor '" + name + "' has dtype " + std::string(info.name) +
                      ", which cannot be converted to f32; hint: weights must be F32/F16/BF16 or a ggml block type");
    }
    return Status::Ok();
  }

  // The in-memory type of a matrix made of `names` (fused parts): their common 16-bit dtype if
  // they all share one, else f32. Missing tensors are reported by the Load that follows.
  QuantType MatrixType(const std::vector<std::string>& names) const {
    const TensorView* first = find_(names[0]);
    if (!first) return QuantType::kF32;
    for (const std::string& n : names) {
      const TensorView* t = find_(n);
      if (!t || t->dtype != first->dtype) return QuantType::kF32;
    }
    return first->dtype == DType::kBF16  ? QuantType::kBF16
           : first->dtype == DType::kF16 ? QuantType::kF16
                                         : QuantType::kF32;
  }

  // Loads tensor `name` [rows, cols] into rows [row0, row0 + rows) of m: 16-bit bytes copied as
  // stored when m has the tensor's dtype, else dequantized to f32.
  Status LoadRows(const std::string& name, const std::vector<int64_t>& shape, WeightMatrix& m, int64_t row0,
                  ModelWeights& w) const {
    if (m.type() == QuantType::kF32) return Load(name, shape, reinterpret_cast<float*>(m.mutable_row(row0)), w);
    KV_RETURN_IF_ERROR(Check(name, shape));
    const TensorView* t = find_(name);
    const uint64_t want = static_cast<uint64_t>(t->numel()) * QuantTypeBytes(m.type());
    if (t->nbytes != want) {
      return BadInput(source_ + ": tensor '" + name + "' has " + std::to_string(t->nbytes) + " bytes, expected " +
                      std::to_string(want) + "; hint: the file is truncated or its header is wrong");
    }
    std::memcpy(m.mutable_row(row0), t->data, want);
    w.source_dtypes[std::string(GetDTypeInfo(t->dtype).name)] += t->numel();
    w.n_params += t->numel();
    return Status::Ok();
  }

  Status LoadMatrix(const std::string& name, const std::vector<int64_t>& shape, WeightMatrix& m,
                    ModelWeights& w) const {
    m.Resize(shape[0], shape[1], MatrixType({name}));
    return LoadRows(name, shape, m, 0, w);
  }

  Status LoadNew(const std::string& name, const std::vector<int64_t>& shape, AlignedBuffer& buf,
                 ModelWeights& w) const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    buf.Resize(n);
    return Load(name, shape, buf.data(), w);
  }

 private:
  static std::string ShapeStr(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  }
  std::function<const TensorView*(const std::string&)> find_;
  std::string source_, hint_;
  bool in_place_ = false;
};

// The row map that undoes llama.cpp's Q/K permutation (UnpermuteGgufQk) for n_head heads:
// row h*hd + t*hd/2 + j reads stored row h*hd + 2j + t.
std::vector<int32_t> UnpermuteRowMap(int n_head, int head_dim) {
  std::vector<int32_t> map(static_cast<size_t>(n_head) * head_dim);  // [n_head * head_dim]
  const int half = head_dim / 2;
  for (int h = 0; h < n_head; ++h) {
    for (int t = 0; t < 2; ++t) {
      for (int j = 0; j < half; ++j) map[h * head_dim + t * half + j] = h * head_dim + 2 * j + t;
    }
  }
  return map;
}

// Tensor names of one format; `layer(i, role)` gives per-layer names.
struct Names {
  std::string embed, final_norm, output;
  std::function<std::string(int, const char*)> layer;
  // Mixture of experts: layer i's router; expert e's tensor of role gate/up/down, or with e = -1
  // the layer's stacked tensor of that role (GGUF: gate/up/down [n_expert][n_out][n_in]; gpt-oss's
  // Hugging Face checkpoint: gate_up_proj/down_proj, below). No suffix.
  std::function<std::string(int)> router;
  std::function<std::string(int, int, const char*)> expert;
  enum class Experts { kPerExpert, kGgufStacked, kGptOssHf } experts = Experts::kPerExpert;
  // Layer i's tensors of MoE variants kvaudit does not run (shared experts, router biases, fused
  // gate|up experts): present, they are refused rather than ignored.
  std::function<std::vector<std::string>(int)> unsupported;
};

// Roles: attn_norm q k v o q_norm k_norm ffn_norm gate up down, and Phi-3's fused qkv and gate_up; suffix
// ".weight"/".bias" added by caller.
// One layer's tensor name from (role, suffix).
using LayerNames = std::function<std::string(const char*, const char*)>;

// One layer's fused Q|K|V rows: in place, three parts of the mapped file (GGUF Q/K rows un-permuted
// through a row map, nothing moved); copied, one matrix whose Q and K rows are un-permuted in place.
Status LoadQkv(const Loader& ld, const LayerNames& name, const ModelConfig& c, bool gguf_llama, LayerWeights& L,
               ModelWeights& w) {
  const int64_t d = c.d_model, qd = c.q_dim(), kvd = c.kv_dim();
  const std::string q = name("q", ".weight"), k = name("k", ".weight"), v = name("v", ".weight");
  if (ld.in_place()) {
    KV_RETURN_IF_ERROR(ld.AddPart(q, {qd, d}, L.wqkv,
                                  gguf_llama ? UnpermuteRowMap(c.n_heads, c.head_dim) : std::vector<int32_t>{}, w));
    KV_RETURN_IF_ERROR(ld.AddPart(k, {kvd, d}, L.wqkv,
                                  gguf_llama ? UnpermuteRowMap(c.n_kv_heads, c.head_dim) : std::vector<int32_t>{}, w));
    return ld.AddPart(v, {kvd, d}, L.wqkv, {}, w);
  }
  L.wqkv.Resize(qd + 2 * kvd, d, ld.MatrixType({q, k, v}));
  KV_RETURN_IF_ERROR(ld.LoadRows(q, {qd, d}, L.wqkv, 0, w));
  KV_RETURN_IF_ERROR(ld.LoadRows(k, {kvd, d}, L.wqkv, qd, w));
  KV_RETURN_IF_ERROR(ld.LoadRows(v, {kvd, d}, L.wqkv, qd + kvd, w));
  if (gguf_llama) {
    const size_t row_bytes = static_cast<size_t>(d) * QuantTypeBytes(L.wqkv.type());
    UnpermuteRows(L.wqkv.mutable_row(0), c.n_heads, c.head_dim, row_bytes);
    UnpermuteRows(L.wqkv.mutable_row(qd), c.n_kv_heads, c.head_dim, row_bytes);
  }
  return Status::Ok();
}

// Qwen2's Q|K|V biases (un-permuted like their rows for a GGUF llama).
Status LoadQkvBias(const Loader& ld, const LayerNames& name, const ModelConfig& c, bool gguf_llama, LayerWeights& L,
                   ModelWeights& w) {
  const int64_t qd = c.q_dim(), kvd = c.kv_dim();
  L.bqkv.Resize(qd + 2 * kvd);
  KV_RETURN_IF_ERROR(ld.Load(name("q", ".bias"), {qd}, L.bqkv.data(), w));
  KV_RETURN_IF_ERROR(ld.Load(name("k", ".bias"), {kvd}, L.bqkv.data() + qd, w));
  KV_RETURN_IF_ERROR(ld.Load(name("v", ".bias"), {kvd}, L.bqkv.data() + qd + kvd, w));
  if (gguf_llama) {
    UnpermuteGgufQk(L.bqkv.data(), c.n_heads, c.head_dim, 1);
    UnpermuteGgufQk(L.bqkv.data() + qd, c.n_kv_heads, c.head_dim, 1);
  }
  return Status::Ok();
}

// The fused gate|up rows [2*ff, d_model] into m: two parts in place, or one copied matrix.
Status LoadGateUp(const Loader& ld, const LayerNames& name, const ModelConfig& c, int64_t ff, WeightMatrix& m,
                  ModelWeights& w) {
  const int64_t d = c.d_model;
  const std::string gate = name("gate", ".weight"), up = name("up", ".weight");
  if (ld.in_place()) {
    KV_RETURN_IF_ERROR(ld.AddPart(gate, {ff, d}, m, {}, w));
    return ld.AddPart(up, {ff, d}, m, {}, w);
  }
  m.Resize(2 * ff, d, ld.MatrixType({gate, up}));
  KV_RETURN_IF_ERROR(ld.LoadRows(gate, {ff, d}, m, 0, w));
  return ld.LoadRows(up, {ff, d}, m, ff, w);
}

// One matrix from one tensor: in place, or copied (16-bit) / converted (else) as LoadMatrix does.
Status LoadOneMatrix(const Loader& ld, const std::string& name, const std::vector<int64_t>& shape, WeightMatrix& m,
                     ModelWeights& w) {
  return ld.in_place() ? ld.AddPart(name, shape, m, {}, w) : ld.LoadMatrix(name, shape, m, w);
}

// Phi-3 stores q|k|v as one tensor (qkv_proj / attn_qkv) and gate|up as one (gate_up_proj /
// ffn_up, rows gate then up: transformers Phi3MLP chunks it in that order), the very layout of
// wqkv and w_gate_up. llama.cpp also accepts a phi3 GGUF with separate q, k, v
// (create_tensor_qkv, src/models/phi3.cpp @de3ff815), so the fused one is used when present.
bool FusedQkv(const Loader& ld, const LayerNames& name, const ModelConfig& c) {
  return c.arch == Arch::kPhi3 && ld.Has(name("qkv", ".weight"));
}

// Expert e's rows of a stacked [n_expert * rows, cols] view: the slice [e*rows, (e+1)*rows), in place.
WeightView ExpertSlice(const WeightView& all, int64_t e, int64_t rows) {
  WeightView v = all;
  v.data = static_cast<const uint8_t*>(all.data) + static_cast<size_t>(e * rows) * all.row_bytes();
  v.rows = rows;
  return v;
}

// Each expert's bias pointers into the layer's [n_expert, 2*ff] gate | up and [n_expert, d] down biases.
void PointExpertBiases(const ModelConfig& c, LayerWeights& L) {
  for (int e = 0; e < c.n_experts; ++e) {
    L.experts[e].gate_up_bias = L.expert_gate_up_bias.data() + static_cast<int64_t>(e) * 2 * c.expert_ff;
    L.experts[e].down_bias = L.expert_down_bias.data() + static_cast<int64_t>(e) * c.d_model;
  }
}

// gpt-oss's biases (llama.cpp openai-moe.cpp: ffn_gate_inp.bias [n_expert], ffn_{gate,up}_exps.bias
// [n_expert, n_ff_exp], ffn_down_exps.bias [n_expert, n_embd]), each expert's gate | up biases
// side by side like its gate | up rows.
Status LoadStackedExpertBiases(const Loader& ld, const Names& nm, int i, const ModelConfig& c, LayerWeights& L,
                               ModelWeights& w) {
  const int64_t d = c.d_model, ff = c.expert_ff, n = c.n_experts;
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.router(i) + ".bias", {n}, L.router_bias, w));
  AlignedBuffer gate, up;  // [n, ff] each
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.expert(i, -1, "gate") + ".bias", {n, ff}, gate, w));
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.expert(i, -1, "up") + ".bias", {n, ff}, up, w));
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.expert(i, -1, "down") + ".bias", {n, d}, L.expert_down_bias, w));
  L.expert_gate_up_bias.Resize(n * 2 * ff);
  for (int64_t e = 0; e < n; ++e) {
    float* gu = L.expert_gate_up_bias.data() + e * 2 * ff;
    std::copy(gate.data() + e * ff, gate.data() + (e + 1) * ff, gu);
    std::copy(up.data() + e * ff, up.data() + (e + 1) * ff, gu + ff);
  }
  PointExpertBiases(c, L);
  return Status::Ok();
}

// GGUF experts: each expert's matrices are parts viewing its slice of the three stacked tensors.
Status LoadStackedExperts(const Loader& ld, const Names& nm, int i, const ModelConfig& c, LayerWeights& L,
                          ModelWeights& w) {
  const int64_t d = c.d_model, ff = c.expert_ff, n = c.n_experts;
  KV_ASSIGN_OR_RETURN(WeightView gate, ld.View(nm.expert(i, -1, "gate") + ".weight", {n, ff, d}, w));
  KV_ASSIGN_OR_RETURN(WeightView up, ld.View(nm.expert(i, -1, "up") + ".weight", {n, ff, d}, w));
  KV_ASSIGN_OR_RETURN(WeightView down, ld.View(nm.expert(i, -1, "down") + ".weight", {n, d, ff}, w));
  for (int64_t e = 0; e < n; ++e) {
    L.experts[e].gate_up.AddExternalPart(ExpertSlice(gate, e, ff));
    L.experts[e].gate_up.AddExternalPart(ExpertSlice(up, e, ff));
    L.experts[e].down.AddExternalPart(ExpertSlice(down, e, d));
  }
  return c.expert_bias ? LoadStackedExpertBiases(ld, nm, i, c, L, w) : Status::Ok();
}

// ---- gpt-oss's Hugging Face experts (transformers modeling_gpt_oss.py @6edf5b31 GptOssExperts,
// integrations/mxfp4.py @0189b1d0; llama.cpp's converter conversion/gpt_oss.py @2bbcf7fc GptOssModel
// maps them to the GGUF's tensors the same way). Per layer, stacked over the n experts:
//   gate_up_proj [n, d_model, 2*ff] and down_proj [n, ff, d_model]: [in, out], used as x @ W;
//   or as published, MXFP4: *_blocks [n, out, in/32, 16] and *_scales [n, out, in/32] (U8);
//   gate_up_proj_bias [n, 2*ff], down_proj_bias [n, d_model].
// The 2*ff outputs of gate_up interleave gate and up (gate = [..., ::2], up = [..., 1::2]); kvaudit's
// rows are gate then up, so its row r is HF output GateUpSource(r).

// The HF gate_up output that kvaudit's gate|up row r of an expert of width ff reads.
int64_t GateUpSource(int64_t r, int64_t ff) { return r < ff ? 2 * r : 2 * (r - ff) + 1; }

// One role's experts as MXFP4, kept packed: each HF block relaid as ggml's block_mxfp4.
Status LoadGptOssHfMxfp4(const Loader& ld, const std::string& name, const ModelConfig& c, int64_t rows, int64_t cols,
                         bool gate_up, WeightMatrix ExpertWeights::*which, LayerWeights& L, ModelWeights& w) {
  const int64_t n = c.n_experts, groups = cols / 32;
  const TensorView* blocks = ld.Find(name + "_blocks");
  const TensorView* scales = ld.Find(name + "_scales");
  for (const auto& [t, suffix] : {std::pair{blocks, "_blocks"}, std::pair{scales, "_scales"}}) {
    if (!t) {
      return BadInput(ld.source() + ": missing tensor '" + name + suffix +
                      "'; hint: MXFP4 experts need both _blocks and _scales of gate_up_proj and down_proj");
    }
  }
  if (cols % 32 != 0) {
    return BadInput(ld.source() + ": tensor '" + name + "_blocks' holds rows of " + std::to_string(cols) +
                    " elements, not whole MXFP4 blocks of 32; hint: check hidden_size / intermediate_size");
  }
  const std::vector<int64_t> want_b = {n, rows, groups, 16}, want_s = {n, rows, groups};
  for (const auto& [t, want] : {std::pair{blocks, want_b}, std::pair{scales, want_s}}) {
    if (t->dtype != DType::kU8 || t->shape != want || t->nbytes != static_cast<uint64_t>(t->numel())) {
      return BadInput(ld.source() + ": tensor '" + t->name +
                      "' is not U8 of the shape config.json implies; hint: "
                      "MXFP4 experts are U8 blocks [experts, out, in/32, 16] and scales [experts, out, in/32]");
    }
  }
  const size_t block_bytes = QuantRowBytes(QuantType::kMXFP4, 32);
  for (int64_t e = 0; e < n; ++e) {
    WeightMatrix& m = L.experts[e].*which;
    m.Resize(rows, cols, QuantType::kMXFP4);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t src = (e * rows + (gate_up ? GateUpSource(r, rows / 2) : r)) * groups;
      uint8_t* dst = m.mutable_row(r);
      for (int64_t g = 0; g < groups; ++g)
        RepackHfMxfp4Block(blocks->data + (src + g) * 16, scales->data[src + g], dst + g * block_bytes);
    }
  }
  w.source_dtypes["MXFP4"] += n * rows * cols;
  w.n_params += n * rows * cols;
  return Status::Ok();
}

// One role's experts from the dequantized [n, in, out] tensor, transposed to [out, in] rows: 16-bit
// values kept as stored, any other dtype converted to f32.
Status LoadGptOssHfDense(const Loader& ld, const std::string& name, const ModelConfig& c, int64_t in, int64_t out,
                         bool gate_up, WeightMatrix ExpertWeights::*which, LayerWeights& L, ModelWeights& w) {
  const int64_t n = c.n_experts;
  KV_RETURN_IF_ERROR(ld.Check(name, {n, in, out}));
  const TensorView* t = ld.Find(name);
  const bool half = t->dtype == DType::kBF16 || t->dtype == DType::kF16;
  std::vector<float> f32;
  if (!half) {
    f32.resize(t->numel());
    KV_RETURN_IF_ERROR(DequantizeToF32(*t, f32.data()));
  } else if (t->nbytes != static_cast<uint64_t>(t->numel()) * 2) {
    return BadInput(ld.source() + ": tensor '" + name + "' has " + std::to_string(t->nbytes) +
                    " bytes for its shape; hint: the file is truncated or its header is wrong");
  }
  const QuantType type = !half ? QuantType::kF32 : t->dtype == DType::kBF16 ? QuantType::kBF16 : QuantType::kF16;
  const size_t es = half ? 2 : 4;
  const uint8_t* src = half ? t->data : reinterpret_cast<const uint8_t*>(f32.data());
  for (int64_t e = 0; e < n; ++e) {
    WeightMatrix& m = L.experts[e].*which;
    m.Resize(out, in, type);
    for (int64_t r = 0; r < out; ++r) {
      const int64_t col = gate_up ? GateUpSource(r, out / 2) : r;
      uint8_t* dst = m.mutable_row(r);
      for (int64_t i = 0; i < in; ++i) std::memcpy(dst + i * es, src + ((e * in + i) * out + col) * es, es);
    }
  }
  w.source_dtypes[std::string(GetDTypeInfo(t->dtype).name)] += t->numel();
  w.n_params += t->numel();
  return Status::Ok();
}

// The router bias and the experts' biases, gate|up de-interleaved like the rows.
Status LoadGptOssHfBiases(const Loader& ld, const Names& nm, int i, const ModelConfig& c, LayerWeights& L,
                          ModelWeights& w) {
  const int64_t n = c.n_experts, ff = c.expert_ff;
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.router(i) + ".bias", {n}, L.router_bias, w));
  AlignedBuffer interleaved;
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.expert(i, -1, "gate_up_proj_bias"), {n, 2 * ff}, interleaved, w));
  L.expert_gate_up_bias.Resize(n * 2 * ff);
  for (int64_t e = 0; e < n; ++e) {
    for (int64_t r = 0; r < 2 * ff; ++r)
      L.expert_gate_up_bias.data()[e * 2 * ff + r] = interleaved.data()[e * 2 * ff + GateUpSource(r, ff)];
  }
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.expert(i, -1, "down_proj_bias"), {n, c.d_model}, L.expert_down_bias, w));
  PointExpertBiases(c, L);
  return Status::Ok();
}

Status LoadGptOssHfExperts(const Loader& ld, const Names& nm, int i, const ModelConfig& c, LayerWeights& L,
                           ModelWeights& w) {
  const int64_t d = c.d_model, ff = c.expert_ff;
  const std::string gate_up = nm.expert(i, -1, "gate_up_proj"), down = nm.expert(i, -1, "down_proj");
  if (ld.Has(gate_up + "_blocks")) {
    KV_RETURN_IF_ERROR(LoadGptOssHfMxfp4(ld, gate_up, c, 2 * ff, d, true, &ExpertWeights::gate_up, L, w));
    KV_RETURN_IF_ERROR(LoadGptOssHfMxfp4(ld, down, c, d, ff, false, &ExpertWeights::down, L, w));
  } else {
    KV_RETURN_IF_ERROR(LoadGptOssHfDense(ld, gate_up, c, d, 2 * ff, true, &ExpertWeights::gate_up, L, w));
    KV_RETURN_IF_ERROR(LoadGptOssHfDense(ld, down, c, ff, d, false, &ExpertWeights::down, L, w));
  }
  return LoadGptOssHfBiases(ld, nm, i, c, L, w);
}

// Layer i's router and experts (model/moe.h).
Status LoadExperts(const Loader& ld, const Names& nm, int i, const ModelConfig& c, LayerWeights& L, ModelWeights& w) {
  for (const std::string& t : nm.unsupported(i)) {
    const bool used_bias =
        c.expert_bias && (t.find("exps.bias") != std::string::npos || t.find("ffn_gate_inp.bias") != std::string::npos);
    if (!used_bias && ld.Has(t)) {
      return BadInput(ld.source() + ": tensor '" + t +
                      "' belongs to a mixture-of-experts variant kvaudit does not run (shared expert, router bias or "
                      "fused experts); hint: kvaudit runs softmax-routed SiLU experts only (docs/models-moe.md)");
    }
  }
  KV_RETURN_IF_ERROR(LoadOneMatrix(ld, nm.router(i) + ".weight", {c.n_experts, c.d_model}, L.router, w));
  L.experts.resize(c.n_experts);
  if (nm.experts == Names::Experts::kGgufStacked) return LoadStackedExperts(ld, nm, i, c, L, w);
  if (nm.experts == Names::Experts::kGptOssHf) return LoadGptOssHfExperts(ld, nm, i, c, L, w);
  for (int e = 0; e < c.n_experts; ++e) {
    const LayerNames name = [&](const char* role, const char* suffix) { return nm.expert(i, e, role) + suffix; };
    KV_RETURN_IF_ERROR(LoadGateUp(ld, name, c, c.expert_ff, L.experts[e].gate_up, w));
    KV_RETURN_IF_ERROR(LoadOneMatrix(ld, name("down", ".weight"), {c.d_model, c.expert_ff}, L.experts[e].down, w));
  }
  return Status::Ok();
}

// Attention and norms of one layer, and its dense FFN (a MoE FFN is LoadExperts').
Status LoadLayer(const Loader& ld, const LayerNames& name, const ModelConfig& c, bool gguf_llama, LayerWeights& L,
                 ModelWeights& w) {
  const int64_t d = c.d_model, qd = c.q_dim(), hd = c.head_dim;
  KV_RETURN_IF_ERROR(ld.LoadNew(name("attn_norm", ".weight"), {d}, L.attn_norm, w));
  if (FusedQkv(ld, name, c)) {
    KV_RETURN_IF_ERROR(LoadOneMatrix(ld, name("qkv", ".weight"), {qd + 2 * c.kv_dim(), d}, L.wqkv, w));
  } else {
    KV_RETURN_IF_ERROR(LoadQkv(ld, name, c, gguf_llama, L, w));
  }
  if (c.attn_qkv_bias) KV_RETURN_IF_ERROR(LoadQkvBias(ld, name, c, gguf_llama, L, w));
  if (c.qk_norm) {
    KV_RETURN_IF_ERROR(ld.LoadNew(name("q_norm", ".weight"), {hd}, L.q_norm, w));
    KV_RETURN_IF_ERROR(ld.LoadNew(name("k_norm", ".weight"), {hd}, L.k_norm, w));
  }
  KV_RETURN_IF_ERROR(LoadOneMatrix(ld, name("o", ".weight"), {d, qd}, L.wo, w));
  if (c.attn_o_bias) KV_RETURN_IF_ERROR(ld.LoadNew(name("o", ".bias"), {d}, L.bo, w));
  // The sinks have no suffix in transformers (GptOssAttention.sinks, a bare parameter); llama.cpp's
  // converter adds ".weight" (GptOssModel.filter_tensors): each format's role name carries it.
  if (c.arch == Arch::kGptOss) KV_RETURN_IF_ERROR(ld.LoadNew(name("sinks", ""), {c.n_heads}, L.attn_sinks, w));
  KV_RETURN_IF_ERROR(ld.LoadNew(name("ffn_norm", ".weight"), {d}, L.ffn_norm, w));
  if (c.sandwich_norms) {
    KV_RETURN_IF_ERROR(ld.LoadNew(name("post_attn_norm", ".weight"), {d}, L.post_attn_norm, w));
    KV_RETURN_IF_ERROR(ld.LoadNew(name("post_ffn_norm", ".weight"), {d}, L.post_ffn_norm, w));
  }
  if (c.is_moe()) return Status::Ok();
  if (c.arch == Arch::kPhi3) {
    KV_RETURN_IF_ERROR(LoadOneMatrix(ld, name("gate_up", ".weight"), {2 * c.d_ff, d}, L.w_gate_up, w));
  } else {
    KV_RETURN_IF_ERROR(LoadGateUp(ld, name, c, c.d_ff, L.w_gate_up, w));
  }
  return LoadOneMatrix(ld, name("down", ".weight"), {d, c.d_ff}, L.w_down, w);
}

Expected<ModelWeights> LoadAll(const Loader& ld, const Names& nm, const ModelConfig& c, bool gguf_llama) {
  ModelWeights w;
  KV_RETURN_IF_ERROR(LoadOneMatrix(ld, nm.embed, {c.vocab_size, c.d_model}, w.embed, w));
  w.layers.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) {
    const LayerNames name = [&](const char* role, const char* suffix) { return nm.layer(i, role) + suffix; };
    KV_RETURN_IF_ERROR(LoadLayer(ld, name, c, gguf_llama, w.layers[i], w));
    if (c.is_moe()) KV_RETURN_IF_ERROR(LoadExperts(ld, nm, i, c, w.layers[i], w));
  }
  KV_RETURN_IF_ERROR(ld.LoadNew(nm.final_norm, {c.d_model}, w.final_norm, w));
  if (!c.tied_embeddings && ld.Has(nm.output)) {
    KV_RETURN_IF_ERROR(LoadOneMatrix(ld, nm.output, {c.vocab_size, c.d_model}, w.lm_head, w));
  }
  return w;
}

// gpt-oss's Hugging Face names: mlp.router.{weight,bias}, mlp.experts.<stacked tensor>.
void SetHfGptOssNames(Names& nm) {
  auto mlp = [](int i) { return "model.layers." + std::to_string(i) + ".mlp"; };
  nm.router = [mlp](int i) { return mlp(i) + ".router"; };
  nm.expert = [mlp](int i, int, const char* tensor) { return mlp(i) + ".experts." + tensor; };
  nm.experts = Names::Experts::kGptOssHf;
  nm.unsupported = [](int) { return std::vector<std::string>{}; };
}

// Hugging Face expert names: Qwen3-MoE's mlp.gate / mlp.experts.E.{gate,up,down}_proj
// (modeling_qwen3_moe.py) and Mixtral's block_sparse_moe.gate / block_sparse_moe.experts.E.{w1,w3,w2}
// (modeling_mixtral.py: w1 gate, w3 up, w2 down), as the checkpoints store them.
void SetHfExpertNames(Arch arch, Names& nm) {
  const bool mixtral = arch == Arch::kMixtral;
  const std::string block = mixtral ? ".block_sparse_moe" : ".mlp";
  auto layer = [block](int i) { return "model.layers." + std::to_string(i) + block; };
  nm.router = [layer](int i) { return layer(i) + ".gate"; };
  nm.expert = [layer, mixtral](int i, int e, const char* role) {
    const std::string r = role;
    const std::string leaf = mixtral ? (r == "gate" ? "w1" : r == "up" ? "w3" : "w2") : r + "_proj";
    return layer(i) + ".experts." + std::to_string(e) + "." + leaf;
  };
  nm.unsupported = [layer](int i) {
    return std::vector<std::string>{layer(i) + ".shared_expert.gate_proj.weight",
                                    layer(i) + ".shared_expert_gate.weight", layer(i) + ".gate.bias",
                                    layer(i) + ".experts.gate_up_proj", layer(i) + ".experts.down_proj"};
  };
}

// Gemma's RMSNorm multiplies by (1 + w) (transformers Gemma2RMSNorm, in f32); llama.cpp's converter
// stores 1 + w (convert_hf_to_gguf.py Gemma2Model), which every norm here then uses as stored.
void AddOneToGemmaNorms(ModelWeights& w) {
  auto add_one = [](AlignedBuffer& b) {
    for (int64_t i = 0; i < b.size(); ++i) b.data()[i] = 1.0f + b.data()[i];
  };
  for (LayerWeights& L : w.layers) {
    for (AlignedBuffer* b : {&L.attn_norm, &L.post_attn_norm, &L.ffn_norm, &L.post_ffn_norm, &L.q_norm, &L.k_norm})
      add_one(*b);
  }
  add_one(w.final_norm);
}
}  // namespace

Expected<ModelWeights> LoadWeightsHf(const SafetensorsSet& st, const ModelConfig& c, const std::string& dir) {
  const bool gemma = c.arch == Arch::kGemma2 || c.arch == Arch::kGemma3;
  Loader ld([&](const std::string& n) { return st.Find(n); }, dir,
            "the checkpoint does not match config.json (architecture " + std::string(ArchName(c.arch)) + ")",
            /*in_place=*/false);
  Names nm;
  nm.embed = "model.embed_tokens.weight";
  nm.final_norm = "model.norm.weight";
  nm.output = "lm_head.weight";
  nm.layer = [gemma](int i, const char* role) {
    static const std::map<std::string, std::string> kRole = {
        {"attn_norm", "input_layernorm"}, {"q", "self_attn.q_proj"},
        {"k", "self_attn.k_proj"},        {"v", "self_attn.v_proj"},
        {"o", "self_attn.o_proj"},        {"q_norm", "self_attn.q_norm"},
        {"k_norm", "self_attn.k_norm"},   {"ffn_norm", "post_attention_layernorm"},
        {"gate", "mlp.gate_proj"},        {"up", "mlp.up_proj"},
        {"down", "mlp.down_proj"},        {"qkv", "self_attn.qkv_proj"},
        {"gate_up", "mlp.gate_up_proj"},  {"sinks", "self_attn.sinks"}};
    // Gemma's sandwich: post_attention_layernorm is the attention output's norm there, and the FFN's
    // input norm is pre_feedforward_layernorm (modeling_gemma2.py Gemma2DecoderLayer).
    static const std::map<std::string, std::string> kGemmaRole = {{"ffn_norm", "pre_feedforward_layernorm"},
                                                                  {"post_attn_norm", "post_attention_layernorm"},
                                                                  {"post_ffn_norm", "post_feedforward_layernorm"}};
    const auto gemma_role = gemma ? kGemmaRole.find(role) : kGemmaRole.end();
    return "model.layers." + std::to_string(i) + "." +
           (gemma_role != kGemmaRole.end() ? gemma_role->second : kRole.at(role));
  };
  if (c.arch == Arch::kGptOss) {
    SetHfGptOssNames(nm);
  } else {
    SetHfExpertNames(c.arch, nm);
  }
  KV_ASSIGN_OR_RETURN(ModelWeights w, LoadAll(ld, nm, c, /*gguf_llama=*/false));
  if (gemma) AddOneToGemmaNorms(w);
  return w;
}

Expected<ModelWeights> LoadWeightsGguf(const GgufFile& g, const ModelConfig& c, const WeightLoadOptions& options) {
  // In place needs the mapping to outlive the GgufFile (Parse() over caller bytes has none).
  const bool in_place = !options.dequantize_at_load && g.mapping() != nullptr;
  Loader ld([&](const std::string& n) { return g.FindTensor(n); }, g.label(),
            "the GGUF does not match its metadata; re-convert with llama.cpp's convert_hf_to_gguf.py", in_place);
  Names nm;
  nm.embed = "token_embd.weight";
  nm.final_norm = "output_norm.weight";
  nm.output = "output.weight";
  // gpt-oss's pre-FFN norm is the tensor llama.cpp names post_attention_norm (openai-moe.cpp);
  // Gemma's post_attention_norm / post_ffw_norm normalise the sublayers' outputs (gemma2.cpp).
  const bool gpt_oss = c.arch == Arch::kGptOss;
  nm.layer = [gpt_oss](int i, const char* role) {
    static const std::map<std::string, std::string> kRole = {{"attn_norm", "attn_norm"},
                                                             {"q", "attn_q"},
                                                             {"k", "attn_k"},
                                                             {"v", "attn_v"},
                                                             {"o", "attn_output"},
                                                             {"q_norm", "attn_q_norm"},
                                                             {"k_norm", "attn_k_norm"},
                                                             {"ffn_norm", "ffn_norm"},
                                                             {"gate", "ffn_gate"},
                                                             {"up", "ffn_up"},
                                                             {"down", "ffn_down"},
                                                             {"qkv", "attn_qkv"},
                                                             {"gate_up", "ffn_up"},
                                                             {"post_attn_norm", "post_attention_norm"},
                                                             {"post_ffn_norm", "post_ffw_norm"},
                                                             {"sinks", "attn_sinks.weight"}};
    const std::string r = gpt_oss && std::string(role) == "ffn_norm" ? "post_attention_norm" : kRole.at(role);
    return "blk." + std::to_string(i) + "." + r;
  };
  nm.router = [](int i) { return "blk." + std::to_string(i) + ".ffn_gate_inp"; };
  nm.expert = [](int i, int, const char* role) { return "blk." + std::to_string(i) + ".ffn_" + role + "_exps"; };
  nm.experts = Names::Experts::kGgufStacked;
  nm.unsupported = [](int i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    return std::vector<std::string>{b + "ffn_gate_inp_shexp.weight", b + "ffn_gate_shexp.weight",
                                    b + "ffn_up_shexp.weight",       b + "ffn_down_shexp.weight",
                                    b + "ffn_gate_inp.bias",         b + "exp_probs_b.bias",
                                    b + "ffn_gate_up_exps.weight",   b + "ffn_gate_exps.bias",
                                    b + "ffn_up_exps.bias",          b + "ffn_down_exps.bias"};
  };
  // Only the 'llama' converter permutes Q/K (LlamaModel.modify_tensors); qwen2/qwen3 use NEOX RoPE
  // in llama.cpp, which is already rotate-half.
  KV_ASSIGN_OR_RETURN(ModelWeights w, LoadAll(ld, nm, c, /*gguf_llama=*/c.arch == Arch::kLlama));
  if (in_place) w.mappings.push_back(g.mapping());
  return w;
}

}  // namespace kvaudit
