package org.tent4j.transport.nvlink;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;

import org.junit.jupiter.api.BeforeAll;
import org.tent4j.platform.cuda.CudaPlatformProvider;
import org.tent4j.spi.Availability;
import org.tent4j.spi.platform.DevicePlatformProvider;

/**
 * nvlink on real GPUs: every scenario with the real CUDA platform, including two JVMs sharing device memory through
 * CUDA IPC. Skipped, with the CUDA availability cause as the reason, where there is no device;
 * {@code scripts/gpu/run-gpu-tests.sh} runs it on a GPU machine.
 */
class NvlinkCudaGpuTest extends NvlinkScenarios {
    static final CudaPlatformProvider CUDA = new CudaPlatformProvider();

    @BeforeAll
    static void requireGpu() {
        Availability a = CUDA.availability();
        assumeTrue(a.isAvailable(), () -> "no CUDA device: " + a.reason());
    }

    @Override
    List<DevicePlatformProvider> platforms() {
        return List.of(CUDA);
    }

    @Override
    String peerLibrary() {
        return "default";
    }

    @Override
    long[] sizeClasses() {
        return new long[] {1, 7, 4095, 4096, 65_536, 65_537, 1 << 20, 4 << 20, 64 << 20, 256 << 20};
    }
}
