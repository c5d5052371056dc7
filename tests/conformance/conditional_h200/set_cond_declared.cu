
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                   unsigned int value);
extern "C" __device__ int probe_set_cond_declared(int *ret, unsigned long long handle,
                                                  unsigned int value)
{
    cudaGraphSetConditional(handle, value);
    *ret = 0;
    return 0;
}
