// A kernel that writes through a wild pointer; reports what the runtime says.
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        cudaError_t err_ = (call);                                               \
        if (err_ != cudaSuccess) {                                               \
            fprintf(stderr, "CUDA error %d (%s) at %s:%d: %s\n", (int)err_,      \
                    cudaGetErrorName(err_), __FILE__, __LINE__,                  \
                    cudaGetErrorString(err_));                                   \
        }                                                                        \
    } while (0)

__global__ void wild_write(int* p) {
    p[blockIdx.x * blockDim.x + threadIdx.x] = 42;
}

int main() {
    int* good = nullptr;
    CHECK(cudaMalloc(&good, 1 << 20));
    int* bad = reinterpret_cast<int*>(0xdead00000000ULL);
    printf("launching wild_write<<<4, 128>>> on %p\n", (void*)bad);
    fflush(stdout);
    wild_write<<<4, 128>>>(bad);
    cudaError_t launch = cudaGetLastError();
    printf("cudaGetLastError after launch: %s\n", cudaGetErrorString(launch));
    cudaError_t sync = cudaDeviceSynchronize();
    printf("cudaDeviceSynchronize: %s\n", cudaGetErrorString(sync));
    fflush(stdout);
    CHECK(sync);
    CHECK(cudaMemset(good, 0, 1 << 20));  // sticky: every later call fails too
    CHECK(cudaFree(good));
    return sync == cudaSuccess ? 0 : 1;
}
