package org.tent4j.transport.rdma;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Facts about this machine's verbs stack that decide which exact answers tests expect. libibverbs reports ENOSYS
 * from {@code ibv_get_device_list} when the kernel exposes no uverbs ABI
 * ({@code /sys/class/infiniband_verbs/abi_version} is missing), as on the project's build machine whose kernel has
 * {@code CONFIG_INFINIBAND} unset.
 */
final class NoDevice {
    static final String ENOSYS_CAUSE =
            "no RDMA devices: ibv_get_device_list returned NULL, errno 38 (Function not implemented)";

    private NoDevice() {
    }

    static boolean kernelHasNoVerbs() {
        return !Files.exists(Path.of("/sys/class/infiniband_verbs/abi_version"));
    }

    static boolean libraryInstalled() {
        return VerbsLibrary.tryLoad(VerbsLibrary.LIBRARY) instanceof VerbsLibrary;
    }
}
