package org.tent4j.platform.cuda;

import org.tent4j.testkit.nativecode.CProgram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every function the platform binds resolves in the real libcudart with the descriptor it is bound with, and the
 * constants and struct offsets it relies on match the installed CUDA headers.
 */
class CudaBindingTest {
    static final Path CUDA_HOME = Path.of("/usr/local/cuda");
    static final Path LIBCUDART = CUDA_HOME.resolve("lib64/libcudart.so.13");

    @Test
    void everyBoundFunctionResolvesAndLinks() {
        assumeTrue(Files.exists(LIBCUDART), "no " + LIBCUDART + " on this machine");
        SymbolLookup lib = SymbolLookup.libraryLookup(LIBCUDART, Arena.global());
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, FunctionDescriptor> f : CudaRuntime.FUNCTIONS.entrySet()) {
            var address = lib.find(f.getKey());
            if (address.isEmpty()) {
                missing.add(f.getKey());
                continue;
            }
            MethodHandle h = Linker.nativeLinker().downcallHandle(address.get(), f.getValue());
            assertEquals(f.getValue().toMethodType(), h.type(), f.getKey());
        }
        assertEquals(List.of(), missing, "symbols missing from " + LIBCUDART);
        assertEquals(25, CudaRuntime.FUNCTIONS.size());
    }

    @Test
    void runtimeLoadsAndAnswersWithoutADriver() throws Exception {
        assumeTrue(Files.exists(LIBCUDART), "no " + LIBCUDART + " on this machine");
        CudaRuntime cuda = CudaRuntime.load("libcudart.so.13", List.of(LIBCUDART.toString()));
        assertEquals(LIBCUDART.toString(), cuda.openedFrom());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment version = arena.allocate(java.lang.foreign.ValueLayout.JAVA_INT);
            assertEquals(0, cuda.runtimeGetVersion(version));
            assertTrue(version.get(java.lang.foreign.ValueLayout.JAVA_INT, 0) >= 11000);
        }
        assertNotNull(cuda.describe(35));
    }

    @Test
    void constantsAndOffsetsMatchTheHeaders(@TempDir Path dir) throws Exception {
        assumeTrue(Files.isDirectory(CUDA_HOME.resolve("include")), "no CUDA headers at " + CUDA_HOME.resolve("include"));
        assumeTrue(CProgram.gccAvailable(), "no gcc");
        String source = """
                #include <stdio.h>
                #include <stddef.h>
                #include <cuda_runtime_api.h>
                int main(void) {
                  printf("ptr.type=%zu\\n", offsetof(struct cudaPointerAttributes, type));
                  printf("ptr.device=%zu\\n", offsetof(struct cudaPointerAttributes, device));
                  printf("ptr.devicePointer=%zu\\n", offsetof(struct cudaPointerAttributes, devicePointer));
                  printf("ptr.hostPointer=%zu\\n", offsetof(struct cudaPointerAttributes, hostPointer));
                  printf("ptr.sizeof=%zu\\n", sizeof(struct cudaPointerAttributes));
                  printf("prop.name=%zu\\n", offsetof(struct cudaDeviceProp, name));
                  printf("prop.nameBytes=%zu\\n", sizeof(((struct cudaDeviceProp *)0)->name));
                  printf("prop.totalGlobalMem=%zu\\n", offsetof(struct cudaDeviceProp, totalGlobalMem));
                  printf("prop.sizeof=%zu\\n", sizeof(struct cudaDeviceProp));
                  printf("ipc.sizeof=%zu\\n", sizeof(cudaIpcMemHandle_t));
                  printf("memcpyDefault=%d\\n", (int) cudaMemcpyDefault);
                  printf("streamNonBlocking=%d\\n", (int) cudaStreamNonBlocking);
                  printf("ipcLazy=%d\\n", (int) cudaIpcMemLazyEnablePeerAccess);
                  printf("typeUnregistered=%d\\n", (int) cudaMemoryTypeUnregistered);
                  printf("typeHost=%d\\n", (int) cudaMemoryTypeHost);
                  printf("typeDevice=%d\\n", (int) cudaMemoryTypeDevice);
                  printf("typeManaged=%d\\n", (int) cudaMemoryTypeManaged);
                  printf("attrUva=%d\\n", (int) cudaDevAttrUnifiedAddressing);
                  printf("attrCcMajor=%d\\n", (int) cudaDevAttrComputeCapabilityMajor);
                  printf("attrCcMinor=%d\\n", (int) cudaDevAttrComputeCapabilityMinor);
                  printf("errInvalidValue=%d\\n", (int) cudaErrorInvalidValue);
                  printf("errMemoryAllocation=%d\\n", (int) cudaErrorMemoryAllocation);
                  printf("errInitialization=%d\\n", (int) cudaErrorInitializationError);
                  printf("errInvalidDevicePointer=%d\\n", (int) cudaErrorInvalidDevicePointer);
                  printf("errInsufficientDriver=%d\\n", (int) cudaErrorInsufficientDriver);
                  printf("errDevicesUnavailable=%d\\n", (int) cudaErrorDevicesUnavailable);
                  printf("errNoDevice=%d\\n", (int) cudaErrorNoDevice);
                  printf("errInvalidDevice=%d\\n", (int) cudaErrorInvalidDevice);
                  printf("errInvalidResourceHandle=%d\\n", (int) cudaErrorInvalidResourceHandle);
                  printf("sizeofSizeT=%zu\\n", sizeof(size_t));
                  return 0;
                }
                """;
        Map<String, String> v = CProgram.run(dir, source, List.of("-I" + CUDA_HOME.resolve("include")));
        assertEquals(String.valueOf(CudaRuntime.POINTER_ATTRIBUTES_TYPE), v.get("ptr.type"));
        assertEquals(String.valueOf(CudaRuntime.POINTER_ATTRIBUTES_DEVICE), v.get("ptr.device"));
        assertEquals(String.valueOf(CudaRuntime.POINTER_ATTRIBUTES_DEVICE_POINTER), v.get("ptr.devicePointer"));
        assertEquals(String.valueOf(CudaRuntime.POINTER_ATTRIBUTES_HOST_POINTER), v.get("ptr.hostPointer"));
        assertTrue(Long.parseLong(v.get("ptr.sizeof")) <= CudaRuntime.POINTER_ATTRIBUTES_BYTES, v.get("ptr.sizeof"));
        assertEquals(String.valueOf(CudaRuntime.DEVICE_PROP_NAME), v.get("prop.name"));
        assertEquals(String.valueOf(CudaRuntime.DEVICE_PROP_NAME_BYTES), v.get("prop.nameBytes"));
        assertEquals(String.valueOf(CudaRuntime.DEVICE_PROP_TOTAL_GLOBAL_MEM), v.get("prop.totalGlobalMem"));
        assertTrue(Long.parseLong(v.get("prop.sizeof")) <= CudaRuntime.DEVICE_PROP_BYTES, v.get("prop.sizeof"));
        assertEquals(String.valueOf(CudaRuntime.IPC_MEM_HANDLE.byteSize()), v.get("ipc.sizeof"));
        assertEquals(String.valueOf(CudaRuntime.MEMCPY_DEFAULT), v.get("memcpyDefault"));
        assertEquals(String.valueOf(CudaRuntime.STREAM_NON_BLOCKING), v.get("streamNonBlocking"));
        assertEquals(String.valueOf(CudaRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS), v.get("ipcLazy"));
        assertEquals(String.valueOf(CudaRuntime.MEMORY_TYPE_UNREGISTERED), v.get("typeUnregistered"));
        assertEquals(String.valueOf(CudaRuntime.MEMORY_TYPE_HOST), v.get("typeHost"));
        assertEquals(String.valueOf(CudaRuntime.MEMORY_TYPE_DEVICE), v.get("typeDevice"));
        assertEquals(String.valueOf(CudaRuntime.MEMORY_TYPE_MANAGED), v.get("typeManaged"));
        assertEquals(String.valueOf(CudaRuntime.ATTR_UNIFIED_ADDRESSING), v.get("attrUva"));
        assertEquals(String.valueOf(CudaRuntime.ATTR_COMPUTE_CAPABILITY_MAJOR), v.get("attrCcMajor"));
        assertEquals(String.valueOf(CudaRuntime.ATTR_COMPUTE_CAPABILITY_MINOR), v.get("attrCcMinor"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_INVALID_VALUE), v.get("errInvalidValue"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_MEMORY_ALLOCATION), v.get("errMemoryAllocation"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_INITIALIZATION), v.get("errInitialization"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_INVALID_DEVICE_POINTER), v.get("errInvalidDevicePointer"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_INSUFFICIENT_DRIVER), v.get("errInsufficientDriver"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_DEVICES_UNAVAILABLE), v.get("errDevicesUnavailable"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_NO_DEVICE), v.get("errNoDevice"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_INVALID_DEVICE), v.get("errInvalidDevice"));
        assertEquals(String.valueOf(CudaRuntime.ERROR_INVALID_RESOURCE_HANDLE), v.get("errInvalidResourceHandle"));
        // size_t is bound as JAVA_LONG
        assertEquals("8", v.get("sizeofSizeT"));
    }
}
