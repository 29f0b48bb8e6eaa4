package org.tent4j.integration.nixl.backend;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import org.tent4j.integration.nixl.MemoryType;
import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.BackendContext;
import org.tent4j.integration.nixl.spi.BackendProvider;
import org.tent4j.integration.nixl.spi.OptionSpec;

/**
 * The tent4j engine as a backend: remote, loopback and notifications over whatever transports the engine runs; FILE
 * and BLK regions (devId = open file descriptor, address = offset) become engine file segments, always targets.
 */
public final class Tent4jBackendProvider implements BackendProvider {
    public static final String ID = "tent4j";

    @Override
    public String id() {
        return ID;
    }

    @Override
    public boolean supportsRemote() {
        return true;
    }

    @Override
    public boolean supportsLocal() {
        return true;
    }

    @Override
    public boolean supportsNotifications() {
        return true;
    }

    @Override
    public Set<MemoryType> memoryTypes() {
        return EnumSet.of(MemoryType.DRAM, MemoryType.VRAM, MemoryType.FILE, MemoryType.BLK);
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(
                new OptionSpec("transport", OptionSpec.Type.STRING, "",
                        "transport id every request must use (e.g. tcp, rdma); empty lets the engine choose"),
                new OptionSpec("timeout", OptionSpec.Type.DURATION, "0",
                        "how long one post may take before it fails; 0 leaves it to the engine's transfer.timeout"),
                new OptionSpec("vram_kind", OptionSpec.Type.STRING, "cuda", "device platform VRAM descriptors live on (cuda, rocm, npu)"));
    }

    @Override
    public Backend create(BackendContext context) {
        return new Tent4jBackend(context);
    }
}
