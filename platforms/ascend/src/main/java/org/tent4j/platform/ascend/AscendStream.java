package org.tent4j.platform.ascend;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

import org.tent4j.platform.common.NativeStream;

/** An ACL stream; every call binds the stream's NPU to the calling thread first, as ACL requires. */
final class AscendStream extends NativeStream {
    private final AclRuntime acl;
    private final AscendPlatform owner;
    private final MemorySegment stream;
    private final int device;

    AscendStream(AclRuntime acl, AscendPlatform owner, MemorySegment stream, int device,
                 Consumer<NativeStream> forget) {
        super("npu:" + device, forget);
        this.acl = acl;
        this.owner = owner;
        this.stream = stream;
        this.device = device;
    }

    @Override
    protected void enqueueCopy(MemorySegment dst, MemorySegment src, long length) {
        int kind = AscendPlatform.memcpyKind(owner.deviceOf(src.address()), owner.deviceOf(dst.address()));
        acl.useDevice(device);
        int rc = acl.memcpyAsync(dst, dst.byteSize(), src, length, kind, stream);
        if (rc != AclRuntime.SUCCESS) {
            throw acl.error(rc, "aclrtMemcpyAsync(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes, kind " + kind + ", " + name() + ")");
        }
    }

    @Override
    protected void awaitQueued() {
        acl.useDevice(device);
        acl.check(acl.synchronizeStream(stream), "aclrtSynchronizeStream(" + name() + ")");
    }

    @Override
    protected void destroy() {
        acl.useDevice(device);
        acl.check(acl.destroyStream(stream), "aclrtDestroyStream(" + name() + ")");
    }
}
