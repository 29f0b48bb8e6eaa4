package org.tent4j.integration.nixl.backend;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import org.tent4j.integration.nixl.MemoryType;
import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.BackendContext;
import org.tent4j.integration.nixl.spi.BackendProvider;
import org.tent4j.integration.nixl.spi.OptionSpec;

/** Loopback copies of host memory inside this process, with no engine in between. */
public final class LocalCopyBackendProvider implements BackendProvider {
    public static final String ID = "local-copy";

    @Override
    public String id() {
        return ID;
    }

    @Override
    public boolean supportsRemote() {
        return false;
    }

    @Override
    public boolean supportsLocal() {
        return true;
    }

    @Override
    public boolean supportsNotifications() {
        return false;
    }

    @Override
    public Set<MemoryType> memoryTypes() {
        return EnumSet.of(MemoryType.DRAM);
    }

    @Override
    public List<OptionSpec> options() {
        return List.of(new OptionSpec("inline_limit", OptionSpec.Type.SIZE, "256k",
                "requests up to this many bytes are copied inside post(); larger ones on the backend's own thread"));
    }

    @Override
    public Backend create(BackendContext context) {
        return new LocalCopyBackend(context.agentName(), context.options().size("inline_limit"));
    }
}
