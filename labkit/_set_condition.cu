// labkit.set_condition on the GPU: numba calls this through cuda.declare_device (labkit/conditional.py
// links it automatically). Numba's ABI: the return value goes through *ret, the int returned is a status.
// cudaGraphSetConditional sets the value of a conditional node's handle from device code (CUDA 12.4+).
#include <cuda_device_runtime_api.h>
extern "C" __device__ int labkit_set_condition(int *ret, unsigned long long handle, unsigned int value)
{
    cudaGraphSetConditional((cudaGraphConditionalHandle)handle, value);
    *ret = 0;
    return 0;
}
