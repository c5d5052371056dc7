
#include <cuda_device_runtime_api.h>
extern "C" __device__ int probe_set_cond_header(int *ret, unsigned long long handle,
                                                unsigned int value)
{
    cudaGraphSetConditional((cudaGraphConditionalHandle)handle, value);
    *ret = 0;
    return 0;
}
