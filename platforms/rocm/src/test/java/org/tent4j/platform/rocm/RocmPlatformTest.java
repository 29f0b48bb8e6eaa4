package org.tent4j.platform.rocm;

import org.tent4j.testkit.nativecode.CProgram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.NativeLibrary;
import org.tent4j.spi.platform.DevicePlatformProvider;
import org.tent4j.spi.platform.PointerInfo;

class RocmPlatformTest {

    private static String installedRuntime() {
        try {
            return NativeLibrary.open(RocmPlatformProvider.LIBRARY_DISPLAY, RocmPlatformProvider.defaultCandidates())
                    .openedFrom();
        } catch (Availability.UnavailableException e) {
            return null;
        }
    }

    private static boolean kfdPresent() {
        return Files.exists(Path.of("/dev/kfd"));
    }

    @Test
    void serviceLoaderFindsTheRocmProvider() {
        DevicePlatformProvider provider = ServiceLoader.load(DevicePlatformProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals("rocm")).findFirst().orElseThrow();
        assertEquals(MemoryKind.ROCM, provider.memoryKind());
    }

    @Test
    void causeNamesTheExactReasonForThisMachine() {
        Availability a = new RocmPlatformProvider().availability();
        if (installedRuntime() == null) {
            assertFalse(a.isAvailable());
            assertTrue(a.reason().startsWith("libamdhip64.so.6/.5 not found (searched: libamdhip64.so.6, libamdhip64.so.5"),
                    a.reason());
        } else if (!kfdPresent()) {
            // HIP installed (libamdhip64-5 from Debian) but no AMD GPU driver: what this build machine has
            assertFalse(a.isAvailable());
            assertTrue(a.reason().equals("hipGetDeviceCount failed: 100 hipErrorNoDevice")
                    || a.reason().startsWith("hipGetDeviceCount failed: 100 hipErrorNoDevice ("), a.reason());
        } else {
            assertTrue(a.isAvailable() || a.reason().startsWith("hipGetDeviceCount failed: "), a.reason());
        }
    }

    @Test
    void missingLibraryListsEverythingSearched() {
        RocmPlatformProvider provider = new RocmPlatformProvider(List.of("libamdhip64-absent.so.9", "/nonexistent/libamdhip64.so.6"));
        assertEquals("libamdhip64.so.6/.5 not found (searched: libamdhip64-absent.so.9, /nonexistent/libamdhip64.so.6)",
                provider.availability().reason());
        TransferException e = assertThrows(TransferException.class, provider::create);
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
    }

    @Test
    void defaultSearchTriesRocm6Then5ThenInstallDirs() {
        List<String> c = RocmPlatformProvider.defaultCandidates();
        assertTrue(c.indexOf("libamdhip64.so.6") < c.indexOf("libamdhip64.so.5"), c.toString());
        assertTrue(c.contains("/opt/rocm/lib/libamdhip64.so.6"), c.toString());
        assertEquals("libamdhip64.so", c.get(c.size() - 1));
    }

    @Test
    void everyBoundFunctionResolvesAndLinks() {
        String lib = installedRuntime();
        assumeTrue(lib != null, "no libamdhip64 installed (apt-get install libamdhip64-5)");
        SymbolLookup symbols = lib.contains("/") ? SymbolLookup.libraryLookup(Path.of(lib), Arena.global())
                : SymbolLookup.libraryLookup(lib, Arena.global());
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, FunctionDescriptor> f : HipRuntime.FUNCTIONS.entrySet()) {
            var address = symbols.find(f.getKey());
            if (address.isEmpty()) {
                missing.add(f.getKey());
                continue;
            }
            MethodHandle h = Linker.nativeLinker().downcallHandle(address.get(), f.getValue());
            assertEquals(f.getValue().toMethodType(), h.type(), f.getKey());
        }
        assertEquals(List.of(), missing, "symbols missing from " + lib);
        assertEquals(24, HipRuntime.FUNCTIONS.size());
    }

    @Test
    void errorsNameTheCallAndTheHipError() throws Exception {
        String lib = installedRuntime();
        assumeTrue(lib != null, "no libamdhip64 installed");
        HipRuntime hip = HipRuntime.load(RocmPlatformProvider.LIBRARY_DISPLAY, List.of(lib));
        TransferException e = hip.error(2, "hipMalloc(4096 bytes on rocm:0)");
        assertTrue(e.getMessage().startsWith("hipMalloc(4096 bytes on rocm:0) failed: 2 hipErrorOutOfMemory"), e.getMessage());
        assertEquals(ErrorCode.INTERNAL, e.code());
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, hip.error(100, "hipGetDeviceCount").code());
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, HipRuntime.errorCode(35));
    }

    @Test
    void memoryTypesFollowTheRuntimeMajorVersion() {
        assertEquals(5, HipRuntime.majorVersion(50221153));
        assertEquals(6, HipRuntime.majorVersion(60243483));
        // ROCm 5: 0 is pinned host memory, 1 is device memory
        assertEquals(PointerInfo.of(Location.CPU, true), RocmPlatform.classifyV5(0, 0));
        assertEquals(PointerInfo.of(Location.device(MemoryKind.ROCM, 3), false), RocmPlatform.classifyV5(1, 3));
        // ROCm 6: CUDA's numbering, 0 is unregistered host memory, 2 is device memory
        assertEquals(PointerInfo.of(Location.CPU, false), RocmPlatform.classifyV6(0, 0));
        assertEquals(PointerInfo.of(Location.CPU, true), RocmPlatform.classifyV6(1, 0));
        assertEquals(PointerInfo.of(Location.device(MemoryKind.ROCM, 1), false), RocmPlatform.classifyV6(2, 1));
        assertNull(RocmPlatform.classifyV6(7, 0));
    }

    @Test
    void constantsAndOffsetsMatchTheInstalledHeaders(@TempDir Path dir) throws Exception {
        Path header = Path.of("/usr/include/hip/hip_runtime_api.h");
        assumeTrue(Files.exists(header), "no HIP headers (apt-get install libamdhip64-dev)");
        assumeTrue(CProgram.gccAvailable(), "no gcc");
        String source = """
                #define __HIP_PLATFORM_AMD__ 1
                #include <stdio.h>
                #include <stddef.h>
                #include <hip/hip_runtime_api.h>
                int main(void) {
                  printf("ptr.type=%zu\\n", offsetof(hipPointerAttribute_t, %TYPE%));
                  printf("ptr.device=%zu\\n", offsetof(hipPointerAttribute_t, device));
                  printf("ptr.devicePointer=%zu\\n", offsetof(hipPointerAttribute_t, devicePointer));
                  printf("ptr.hostPointer=%zu\\n", offsetof(hipPointerAttribute_t, hostPointer));
                  printf("ptr.sizeof=%zu\\n", sizeof(hipPointerAttribute_t));
                  printf("ipc.sizeof=%zu\\n", sizeof(hipIpcMemHandle_t));
                  printf("memcpyDefault=%d\\n", (int) hipMemcpyDefault);
                  printf("streamNonBlocking=%d\\n", (int) hipStreamNonBlocking);
                  printf("hostMallocDefault=%d\\n", (int) hipHostMallocDefault);
                  printf("ipcLazy=%d\\n", (int) hipIpcMemLazyEnablePeerAccess);
                  printf("typeHost=%d\\n", (int) hipMemoryTypeHost);
                  printf("typeDevice=%d\\n", (int) hipMemoryTypeDevice);
                  printf("errInvalidValue=%d\\n", (int) hipErrorInvalidValue);
                  printf("errOutOfMemory=%d\\n", (int) hipErrorOutOfMemory);
                  printf("errNotInitialized=%d\\n", (int) hipErrorNotInitialized);
                  printf("errInvalidDevicePointer=%d\\n", (int) hipErrorInvalidDevicePointer);
                  printf("errInsufficientDriver=%d\\n", (int) hipErrorInsufficientDriver);
                  printf("errNoDevice=%d\\n", (int) hipErrorNoDevice);
                  printf("errInvalidDevice=%d\\n", (int) hipErrorInvalidDevice);
                  printf("errInvalidHandle=%d\\n", (int) hipErrorInvalidHandle);
                  printf("version=%d\\n", HIP_VERSION);
                  return 0;
                }
                """;
        // the field is memoryType in ROCm 5 headers and type in ROCm 6
        String field = Files.readString(header).contains("enum hipMemoryType memoryType;") ? "memoryType" : "type";
        Map<String, String> v = CProgram.run(dir, source.replace("%TYPE%", field), List.of());
        int major = HipRuntime.majorVersion(Integer.parseInt(v.get("version")));
        assertEquals(String.valueOf(HipRuntime.POINTER_ATTRIBUTES_TYPE), v.get("ptr.type"));
        assertEquals(String.valueOf(HipRuntime.POINTER_ATTRIBUTES_DEVICE), v.get("ptr.device"));
        assertEquals(String.valueOf(HipRuntime.POINTER_ATTRIBUTES_DEVICE_POINTER), v.get("ptr.devicePointer"));
        assertEquals(String.valueOf(HipRuntime.POINTER_ATTRIBUTES_HOST_POINTER), v.get("ptr.hostPointer"));
        assertTrue(Long.parseLong(v.get("ptr.sizeof")) <= HipRuntime.POINTER_ATTRIBUTES_BYTES);
        assertEquals(String.valueOf(HipRuntime.IPC_MEM_HANDLE.byteSize()), v.get("ipc.sizeof"));
        assertEquals(String.valueOf(HipRuntime.MEMCPY_DEFAULT), v.get("memcpyDefault"));
        assertEquals(String.valueOf(HipRuntime.STREAM_NON_BLOCKING), v.get("streamNonBlocking"));
        assertEquals(String.valueOf(HipRuntime.HOST_MALLOC_DEFAULT), v.get("hostMallocDefault"));
        if (major >= 6) {
            assertEquals(String.valueOf(HipRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V6), v.get("ipcLazy"));
            assertEquals(String.valueOf(HipRuntime.V6_MEMORY_TYPE_HOST), v.get("typeHost"));
            assertEquals(String.valueOf(HipRuntime.V6_MEMORY_TYPE_DEVICE), v.get("typeDevice"));
        } else {
            assertEquals(String.valueOf(HipRuntime.IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V5), v.get("ipcLazy"));
            assertEquals(String.valueOf(HipRuntime.V5_MEMORY_TYPE_HOST), v.get("typeHost"));
            assertEquals(String.valueOf(HipRuntime.V5_MEMORY_TYPE_DEVICE), v.get("typeDevice"));
        }
        assertEquals(String.valueOf(HipRuntime.ERROR_INVALID_VALUE), v.get("errInvalidValue"));
        assertEquals(String.valueOf(HipRuntime.ERROR_OUT_OF_MEMORY), v.get("errOutOfMemory"));
        assertEquals(String.valueOf(HipRuntime.ERROR_NOT_INITIALIZED), v.get("errNotInitialized"));
        assertEquals(String.valueOf(HipRuntime.ERROR_INVALID_DEVICE_POINTER), v.get("errInvalidDevicePointer"));
        assertEquals(String.valueOf(HipRuntime.ERROR_INSUFFICIENT_DRIVER), v.get("errInsufficientDriver"));
        assertEquals(String.valueOf(HipRuntime.ERROR_NO_DEVICE), v.get("errNoDevice"));
        assertEquals(String.valueOf(HipRuntime.ERROR_INVALID_DEVICE), v.get("errInvalidDevice"));
        assertEquals(String.valueOf(HipRuntime.ERROR_INVALID_HANDLE), v.get("errInvalidHandle"));
    }
}
