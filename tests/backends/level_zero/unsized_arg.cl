/* A kernel whose first parameter has a type the fake Level Zero driver's
 * SPIR-V reader does not size (OpTypeSampler: neither scalar, vector nor
 * pointer), so the test can check that zeKernelSetArgumentValue refuses it
 * at every size instead of taking whatever size it is given. */
__kernel void takes_sampler(sampler_t s, __global int* out) { out[0] = 1; }
