package org.tent4j.platform.ascend;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

import org.tent4j.platform.common.PlatformChecks;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.platform.DeviceStream;

/** An ACL stream; every call binds the stream's NPU to the calling thread first, as ACL requires. */
final class AscendStream implements DeviceStream {
    private final AclRuntime acl;
    private final AscendPlatform owner;
    private final MemorySegment stream;
    private final int device;
    private final AtomicBoolean closed = new AtomicBoolean();

    AscendStream(AclRuntime acl, AscendPlatform owner, MemorySegment stream, int device) {
        this.acl = acl;
        this.owner = owner;
        this.stream = stream;
        this.device = device;
    }

    @Override
    public void copyAsync(MemorySegment dst, MemorySegment src, long length) {
        ensureOpen();
        PlatformChecks.checkCopy(dst, src, length);
        if (length == 0) {
            return;
        }
        int kind = AscendPlatform.memcpyKind(owner.deviceOf(src.address()), owner.deviceOf(dst.address()));
        acl.useDevice(device);
        int rc = acl.memcpyAsync(dst, dst.byteSize(), src, length, kind, stream);
        if (rc != AclRuntime.SUCCESS) {
            throw acl.error(rc, "aclrtMemcpyAsync(dst=0x" + Long.toHexString(dst.address()) + ", src=0x"
                    + Long.toHexString(src.address()) + ", " + length + " bytes, kind " + kind + ", stream on npu:"
                    + device + ")");
        }
    }

    @Override
    public void synchronize() {
        ensureOpen();
        acl.useDevice(device);
        acl.check(acl.synchronizeStream(stream), "aclrtSynchronizeStream(stream on npu:" + device + ")");
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "stream on npu:" + device + " is closed");
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            owner.forget(this);
            acl.useDevice(device);
            acl.check(acl.destroyStream(stream), "aclrtDestroyStream(stream on npu:" + device + ")");
        }
    }
}
