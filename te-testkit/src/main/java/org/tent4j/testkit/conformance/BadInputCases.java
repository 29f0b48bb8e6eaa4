package org.tent4j.testkit.conformance;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.conformance.ConformanceSlice.Outcome;
import org.tent4j.testkit.conformance.TransportUnderTest.Region;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Bad input fails with the right codes and touches nothing. */
abstract class BadInputCases extends ByteCases {
    // ------------------------------------------------------------------------------------------------ bad input

    @Test
    void rangePastTheEndOfARemoteBufferFailsAndTouchesNothing() {
        long size = 64 * KIB;
        Region remote = b().allocate(size, 64 * KIB, Permission.READ_WRITE);
        Region local = a().allocate(2 * size, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, 2 * size, 41);
        PeerConnection c = connect(a(), b().descriptor());
        ConformanceSlice write = post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(),
                remote.address() + size - 100, 4096, 0, failureDeadline()));
        assertFailedWith(write, BAD_INPUT, "it runs past the end of the remote buffer");
        assertUntouched(remote.memory(), 0, size + 64 * KIB, "in or after the target buffer of " + write);
        ConformanceSlice read = post(c, slice(Opcode.READ, local, 0, remote.descriptor(),
                remote.address() + size - 100, 4096, 0, failureDeadline()));
        assertFailedWith(read, BAD_INPUT, "it runs past the end of the remote buffer");
    }

    @Test
    void rangeBeyondWhatTheTargetRegisteredFailsDespiteALargerDescriptor() {
        long size = 64 * KIB;
        Region remote = b().allocate(size, 64 * KIB, Permission.READ_WRITE);
        Region local = a().allocate(size, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, size, 43);
        PeerConnection c = connect(a(), b().descriptor());
        // the initiator believes the buffer is twice as long as what the target registered
        BufferDescriptor forged = remote.forged(2 * size, Permission.READ_WRITE);
        ConformanceSlice write = post(c, slice(Opcode.WRITE, local, 0, forged, remote.address() + size - 8, 4096, 0,
                failureDeadline()));
        assertFailedWith(write, BAD_INPUT, "the target registered only " + size + " bytes (the descriptor claims "
                + 2 * size + "); a transport must bound every access by what the target registered");
        assertUntouched(remote.memory(), 0, size + 64 * KIB, "in or after the target buffer of " + write);
    }

    @Test
    void writeToAReadOnlyBufferFailsWhileReadSucceeds() {
        long size = 64 * KIB;
        Region remote = b().allocate(size, Permission.READ_ONLY);
        BytePattern.fill(remote.segment(), 0, size, 51);
        long before = BytePattern.crc32c(remote.segment(), 0, size);
        Region local = a().allocate(size, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        ConformanceSlice read = post(c, slice(Opcode.READ, local, 0, remote.descriptor(), remote.address(), size, 0,
                dataDeadline()));
        assertCompleted(read);
        assertSameBytes(remote.segment(), 0, local.segment(), 0, size, read);
        BytePattern.fill(local.segment(), 0, size, 52);
        ConformanceSlice write = post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), size, 0,
                failureDeadline()));
        assertFailedWith(write, DENIED, "the target buffer is READ_ONLY");
        assertEquals(before, BytePattern.crc32c(remote.segment(), 0, size),
                "a WRITE to a READ_ONLY buffer failed but changed its bytes");
    }

    @Test
    void targetRefusesWriteToReadOnlyBufferDespiteAForgedDescriptor() {
        assumeTrue(targetChecksEveryAccess(), "the transport trusts the published descriptor (one-sided)");
        long size = 4096;
        Region remote = b().allocate(size, Permission.READ_ONLY);
        BytePattern.fill(remote.segment(), 0, size, 53);
        long before = BytePattern.crc32c(remote.segment(), 0, size);
        Region local = a().allocate(size, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        ConformanceSlice write = post(c, slice(Opcode.WRITE, local, 0, remote.forged(size, Permission.READ_WRITE),
                remote.address(), size, 0, failureDeadline()));
        assertFailedWith(write, DENIED, "the target registered the buffer READ_ONLY (the initiator's descriptor says "
                + "READ_WRITE); the target must check with LocalMemory.checkRemoteAccess");
        assertEquals(before, BytePattern.crc32c(remote.segment(), 0, size),
                "a WRITE the target should have refused changed a READ_ONLY buffer");
    }

    @Test
    void targetRefusesABufferItUnregistered() {
        assumeTrue(targetChecksEveryAccess(), "the transport trusts the published descriptor (one-sided)");
        long size = 4096;
        Region remote = b().allocate(size, Permission.READ_WRITE);
        Region local = a().allocate(size, Permission.READ_WRITE);
        BytePattern.fill(local.segment(), 0, size, 61);
        PeerConnection c = connect(a(), b().descriptor());
        assertCompleted(post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), size, 0,
                dataDeadline())));
        b().unregister(remote);
        long before = BytePattern.crc32c(remote.segment(), 0, size);
        BytePattern.fill(local.segment(), 0, size, 62);
        ConformanceSlice stale = post(c, slice(Opcode.WRITE, local, 0, remote.descriptor(), remote.address(), size, 0,
                failureDeadline()));
        assertFailedWith(stale, BAD_INPUT, "the target unregistered the buffer (the initiator holds a stale descriptor)");
        assertEquals(before, BytePattern.crc32c(remote.segment(), 0, size),
                "a WRITE into an unregistered buffer failed but changed its bytes");
    }

    @Test
    void sliceWhoseDeadlineAlreadyPassedFails() {
        Region remote = b().allocate(4096, Permission.READ_WRITE);
        Region local = a().allocate(4096, Permission.READ_WRITE);
        PeerConnection c = connect(a(), b().descriptor());
        long passed = System.nanoTime() - TimeUnit.SECONDS.toNanos(1);
        for (Opcode op : Opcode.values()) {
            ConformanceSlice s = post(c, slice(op, local, 0, remote.descriptor(), remote.address(), 4096, 0, passed));
            Outcome o = await(s, failureLimit());
            assertFalse(o.completed(), () -> s + " completed although its deadline had passed a second before post(); "
                    + "fail it with TIMEOUT");
            assertMessageSaysSomething(s, o);
        }
    }
}
