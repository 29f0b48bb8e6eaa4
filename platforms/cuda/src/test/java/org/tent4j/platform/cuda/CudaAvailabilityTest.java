package org.tent4j.platform.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.ServiceLoader;

import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.NativeLibrary;
import org.tent4j.spi.platform.DevicePlatformProvider;

class CudaAvailabilityTest {

    private static boolean driverInstalled() {
        try {
            NativeLibrary.open("libcuda.so.1", List.of("libcuda.so.1"));
            return true;
        } catch (Availability.UnavailableException e) {
            return false;
        }
    }

    private static boolean runtimeInstalled() {
        try {
            NativeLibrary.open(CudaPlatformProvider.LIBRARY_DISPLAY, CudaPlatformProvider.defaultCandidates());
            return true;
        } catch (Availability.UnavailableException e) {
            return false;
        }
    }

    @Test
    void serviceLoaderFindsTheCudaProvider() {
        DevicePlatformProvider provider = ServiceLoader.load(DevicePlatformProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals("cuda")).findFirst().orElseThrow();
        assertEquals(MemoryKind.CUDA, provider.memoryKind());
        assertEquals(DevicePlatformProvider.SPI_VERSION, provider.spiVersion());
        assertTrue(provider instanceof CudaPlatformProvider);
    }

    @Test
    void causeNamesTheExactReasonForThisMachine() {
        Availability a = new CudaPlatformProvider().availability();
        if (!runtimeInstalled()) {
            assertFalse(a.isAvailable());
            assertTrue(a.reason().startsWith("libcudart.so.13/.12/.11 not found (searched: libcudart.so.13, "),
                    a.reason());
        } else if (!driverInstalled()) {
            // the CUDA runtime without a driver: what this build machine has
            assertFalse(a.isAvailable());
            assertEquals("cudaGetDeviceCount failed: 35 cudaErrorInsufficientDriver"
                    + " (CUDA driver version is insufficient for CUDA runtime version)", a.reason());
        } else if (!a.isAvailable()) {
            assertTrue(a.reason().startsWith("cudaGetDeviceCount failed: 100 cudaErrorNoDevice")
                    || a.reason().startsWith("no CUDA device"), a.reason());
        } else {
            assertNotNull(a);
        }
    }

    @Test
    void probeRunsOncePerJvmForTheDefaultSearch() {
        assertSame(new CudaPlatformProvider().probe(), new CudaPlatformProvider().probe());
    }

    @Test
    void missingLibraryListsEverythingSearched() {
        CudaPlatformProvider provider = new CudaPlatformProvider(
                List.of("libcudart-absent.so.99", "/nonexistent/cuda/lib64/libcudart.so.13"));
        Availability a = provider.availability();
        assertFalse(a.isAvailable());
        assertEquals("libcudart.so.13/.12/.11 not found (searched: libcudart-absent.so.99, "
                + "/nonexistent/cuda/lib64/libcudart.so.13)", a.reason());
        TransferException e = assertThrows(TransferException.class, provider::create);
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
        assertTrue(e.getMessage().contains("cuda platform is unavailable: libcudart.so.13/.12/.11 not found"),
                e.getMessage());
    }

    @Test
    void defaultSearchCoversAllSonamesByNameAndUnderCudaHome() {
        List<String> c = CudaPlatformProvider.defaultCandidates();
        assertTrue(c.containsAll(List.of("libcudart.so.13", "libcudart.so.12", "libcudart.so.11",
                "/usr/local/cuda/lib64/libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.12",
                "/usr/local/cuda/lib64/libcudart.so.11")), c.toString());
        assertTrue(c.indexOf("libcudart.so.13") < c.indexOf("libcudart.so.12"));
    }

    @Test
    void libraryPropertyIsSearchedFirst() {
        String before = System.getProperty(CudaPlatformProvider.LIBRARY_PROPERTY);
        System.setProperty(CudaPlatformProvider.LIBRARY_PROPERTY, "/opt/a/libcudart.so, libcudart.so.14");
        try {
            List<String> c = CudaPlatformProvider.defaultCandidates();
            assertEquals(List.of("/opt/a/libcudart.so", "libcudart.so.14"), c.subList(0, 2));
        } finally {
            if (before == null) {
                System.clearProperty(CudaPlatformProvider.LIBRARY_PROPERTY);
            } else {
                System.setProperty(CudaPlatformProvider.LIBRARY_PROPERTY, before);
            }
        }
    }

    @Test
    void noDriverAndNoDeviceMeanUnavailableOtherFailuresKeepTheirKind() {
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, CudaRuntime.errorCode(35));
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, CudaRuntime.errorCode(100));
        assertEquals(ErrorCode.INVALID_ARGUMENT, CudaRuntime.errorCode(1));
        assertEquals(ErrorCode.INTERNAL, CudaRuntime.errorCode(2));
    }

    @Test
    void errorsNameTheCallTheCodeAndTheRuntimeText() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(runtimeInstalled(), "no libcudart on this machine");
        CudaRuntime cuda = CudaRuntime.load(CudaPlatformProvider.LIBRARY_DISPLAY, CudaPlatformProvider.defaultCandidates());
        TransferException e = cuda.error(2, "cudaMalloc(1048576 bytes on cuda:0)");
        assertEquals("cudaMalloc(1048576 bytes on cuda:0) failed: 2 cudaErrorMemoryAllocation (out of memory)",
                e.getMessage());
        assertEquals(ErrorCode.INTERNAL, e.code());
        TransferException noDriver = cuda.error(35, "cudaMallocHost(4096 bytes)");
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, noDriver.code());
        assertTrue(noDriver.getMessage().startsWith("cudaMallocHost(4096 bytes) failed: 35 cudaErrorInsufficientDriver ("),
                noDriver.getMessage());
    }
}
