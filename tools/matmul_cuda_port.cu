// The design of shaders/matmul.wgsl's large-tile product written in CUDA, to read what the
// WGSL path cannot show: the registers a form takes (ptxas), the workgroups that fit on a
// multiprocessor, and its rate beside cuBLAS's on the same GPU. Square products of 4096, A and
// B row-major (matmul_4096's layout), 64 entries checked against a float64 product on the CPU.
// Not built by the project; docs/log/products.md gives the command and the figures.
//
// Each form: ROWS × 128 tiles of C, 2 × ROWS threads of 8 × 8 outputs (rows ty*4.. and
// ROWS/2 + ty*4.., columns tx*4.. and 64 + tx*4.., as the WGSL kernel), DEPTH-deep slices
// staged in BUFS shared buffers (1: two barriers a slice, as the WGSL kernel; 2: one), the next
// slice fetched into registers during the multiply, MINB the launch bound's blocks.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include <cublas_v2.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ void fma4(float4& c, float a, float4 b) {
  c.x += a * b.x; c.y += a * b.y; c.z += a * b.z; c.w += a * b.w;
}
__device__ __forceinline__ float comp(float4 v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// DEPTH: slice depth; BUFS: shared buffers (1 = two barriers a slice, 2 = one); MINB: launch bound.
template <int DEPTH, int BUFS, int MINB, int ROWS = 128>
__global__ void __launch_bounds__(2 * ROWS, MINB)
mm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  constexpr int T = 2 * ROWS;       // threads
  constexpr int G = ROWS / 4;       // groups of 4 rows in A's tile
  __shared__ float4 as[BUFS][DEPTH][G];
  __shared__ float4 bs[BUFS][DEPTH][32];
  constexpr int PER = DEPTH / 8;  // float4s of A per thread per slice
  constexpr int PERB = (32 * DEPTH + T - 1) / T;  // float4s of B per thread per slice
  constexpr int Q = DEPTH / 4;    // float4s along K in one row of A's slice
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int row0 = blockIdx.y * ROWS, col0 = blockIdx.x * 128;
  float4 c[8][2];
  for (int i = 0; i < 8; i++) for (int j = 0; j < 2; j++) c[i][j] = make_float4(0, 0, 0, 0);
  float4 an[PER], bn[PERB];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int j = 0; j < PER; j++) {
      int s = tid + T * j;
      int r = s / Q, q = s % Q;
      an[j] = *reinterpret_cast<const float4*>(A + (size_t)(row0 + r) * K + k0 + q * 4);
    }
#pragma unroll
    for (int j = 0; j < PERB; j++) {
      int s = tid + T * j;
      if (s < 32 * DEPTH) {
        int kk = s / 32, cc = (s % 32) * 4;
        bn[j] = *reinterpret_cast<const float4*>(B + (size_t)(k0 + kk) * N + col0 + cc);
      }
    }
  };
  auto put = [&](int buf) {
#pragma unroll
    for (int j = 0; j < PER; j++) {
      int s = tid + T * j;
      int r = s / Q, q = s % Q;
      float* at = reinterpret_cast<float*>(&as[buf][0][0]);
#pragma unroll
      for (int i = 0; i < 4; i++) at[(q * 4 + i) * ROWS + r] = comp(an[j], i);
    }
#pragma unroll
    for (int j = 0; j < PERB; j++) {
      int s = tid + T * j;
      if (s < 32 * DEPTH) bs[buf][s / 32][s % 32] = bn[j];
    }
  };
  fetch(0);
  int buf = 0;
  if (BUFS == 2) { put(0); __syncthreads(); }
  for (int k0 = 0; k0 < K; k0 += DEPTH) {
    if (BUFS == 1) { put(0); __syncthreads(); }
    if (k0 + DEPTH < K) fetch(k0 + DEPTH);
#pragma unroll
    for (int d = 0; d < DEPTH; d++) {
      float4 a0 = as[buf][d][ty], a1 = as[buf][d][G / 2 + ty];
      float4 b0 = bs[buf][d][tx], b1 = bs[buf][d][16 + tx];
      fma4(c[0][0], a0.x, b0); fma4(c[0][1], a0.x, b1);
      fma4(c[1][0], a0.y, b0); fma4(c[1][1], a0.y, b1);
      fma4(c[2][0], a0.z, b0); fma4(c[2][1], a0.z, b1);
      fma4(c[3][0], a0.w, b0); fma4(c[3][1], a0.w, b1);
      fma4(c[4][0], a1.x, b0); fma4(c[4][1], a1.x, b1);
      fma4(c[5][0], a1.y, b0); fma4(c[5][1], a1.y, b1);
      fma4(c[6][0], a1.z, b0); fma4(c[6][1], a1.z, b1);
      fma4(c[7][0], a1.w, b0); fma4(c[7][1], a1.w, b1);
    }
    if (BUFS == 1) {
      __syncthreads();
    } else {
      if (k0 + DEPTH < K) put(buf ^ 1);
      __syncthreads();
      buf ^= 1;
    }
  }
  for (int i = 0; i < 8; i++) {
    int r = row0 + (i / 4) * (ROWS / 2) + ty * 4 + i % 4;
    *reinterpret_cast<float4*>(C + (size_t)r * N + col0 + tx * 4) = c[i][0];
    *reinterpret_cast<float4*>(C + (size_t)r * N + col0 + 64 + tx * 4) = c[i][1];
  }
}

template <int DEPTH, int BUFS, int MINB, int ROWS = 128>
void run(const char* name, const float* A, const float* B, float* C, int n, const std::vector<float>& ha,
         const std::vector<float>& hb) {
  dim3 grid(n / 128, n / ROWS), block(16, ROWS / 8);
  CK(cudaMemset(C, 0xff, sizeof(float) * n * n));
  mm<DEPTH, BUFS, MINB, ROWS><<<grid, block>>>(A, B, C, n, n, n);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  std::vector<float> hc((size_t)n * n);
  CK(cudaMemcpy(hc.data(), C, sizeof(float) * n * n, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int t = 0; t < 64; t++) {
    int i = (t * 977) % n, j = (t * 1543 + 7) % n;
    double ref = 0;
    for (int k = 0; k < n; k++) ref += (double)ha[(size_t)i * n + k] * hb[(size_t)k * n + j];
    worst = fmax(worst, fabs(ref - hc[(size_t)i * n + j]) / (fabs(ref) + 1));
  }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int w = 0; w < 5; w++) mm<DEPTH, BUFS, MINB, ROWS><<<grid, block>>>(A, B, C, n, n, n);
  const int reps = 30;
  cudaEventRecord(e0);
  for (int w = 0; w < reps; w++) mm<DEPTH, BUFS, MINB, ROWS><<<grid, block>>>(A, B, C, n, n, n);
  cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
  float ms; cudaEventElapsedTime(&ms, e0, e1); ms /= reps;
  cudaFuncAttributes at; cudaFuncGetAttributes(&at, mm<DEPTH, BUFS, MINB, ROWS>);
  int blocks; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, mm<DEPTH, BUFS, MINB, ROWS>, 2 * ROWS, 0);
  printf("%-24s %.3f ms %.1f TFLOPS regs %d spill %zu blocks/SM %d err %.2e\n", name, ms,
         2.0 * n * n * n / ms / 1e9, at.numRegs, at.localSizeBytes, blocks, worst);
}

int main() {
  const int n = 4096;
  std::vector<float> ha((size_t)n * n), hb((size_t)n * n);
  srand(1);
  for (auto& x : ha) x = rand() / (float)RAND_MAX - 0.5f;
  for (auto& x : hb) x = rand() / (float)RAND_MAX - 0.5f;
  float *A, *B, *C;
  CK(cudaMalloc(&A, sizeof(float) * n * n)); CK(cudaMalloc(&B, sizeof(float) * n * n)); CK(cudaMalloc(&C, sizeof(float) * n * n));
  CK(cudaMemcpy(A, ha.data(), sizeof(float) * n * n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, hb.data(), sizeof(float) * n * n, cudaMemcpyHostToDevice));
  for (int round = 0; round < 2; round++) {
    run<16, 1, 1, 256>("r256 d16 one-buffer", A, B, C, n, ha, hb);
    run<16, 2, 1, 256>("r256 d16 two-buffers", A, B, C, n, ha, hb);
    run<8, 2, 1, 256>("r256 d8 two-buffers", A, B, C, n, ha, hb);
    run<8, 1, 1, 256>("r256 d8 one-buffer", A, B, C, n, ha, hb);
    run<16, 1, 1>("d16 one-buffer", A, B, C, n, ha, hb);
    run<16, 1, 2>("d16 one-buffer minb2", A, B, C, n, ha, hb);
    run<16, 2, 1>("d16 two-buffers", A, B, C, n, ha, hb);
    run<16, 2, 2>("d16 two-buffers minb2", A, B, C, n, ha, hb);
    run<8, 1, 1>("d8 one-buffer", A, B, C, n, ha, hb);
    run<8, 2, 2>("d8 two-buffers minb2", A, B, C, n, ha, hb);
    run<8, 2, 1>("d8 two-buffers", A, B, C, n, ha, hb);
    run<32, 1, 1>("d32 one-buffer", A, B, C, n, ha, hb);
    // cuBLAS fp32 (no TF32): C^T = B^T A^T in column-major terms.
    cublasHandle_t h; cublasCreate(&h);
    cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
    float one = 1, zero = 0;
    for (int w = 0; w < 5; w++) cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0);
    for (int w = 0; w < 30; w++) cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n);
    cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
    float ms; cudaEventElapsedTime(&ms, e0, e1); ms /= 30;
    printf("%-24s %.3f ms %.1f TFLOPS\n", "cublas sgemm", ms, 2.0 * n * n * n / ms / 1e9);
  }
  return 0;
}
