package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** The real libibverbs, called through FFM, on a machine without RDMA hardware. */
class VerbsLibraryTest {

    @Test
    void libraryLoadsAndBindsEverySymbol() {
        assumeTrue(NoDevice.libraryInstalled(), "libibverbs.so.1 is not installed");
        VerbsLibrary lib = VerbsLibrary.load();
        assertSame(lib, VerbsLibrary.load(), "loaded once per JVM");
        assertTrue(lib.hasQueryGidEx(), "rdma-core 44 exports _ibv_query_gid_ex");
    }

    @Test
    void missingLibraryIsReportedByName() {
        Object result = VerbsLibrary.tryLoad("libtent4j-no-such-verbs.so.1");
        VerbsException e = assertInstanceOf(VerbsException.class, result);
        assertEquals("libtent4j-no-such-verbs.so.1 not found", e.getMessage());
    }

    @Test
    void deviceListFailsWithEnosysAndCapturedErrno() {
        assumeTrue(NoDevice.libraryInstalled() && NoDevice.kernelHasNoVerbs(), "kernel has verbs support");
        VerbsLibrary lib = VerbsLibrary.load();
        VerbsLibrary.DeviceList list = lib.getDeviceList();
        assertTrue(list.failed(), "ibv_get_device_list returned NULL");
        assertEquals(0, list.count());
        assertEquals(38, list.errno(), "ENOSYS, captured right after the call");
        lib.freeDeviceList(list); // a failed list is not handed to ibv_free_device_list
        // the same answer every time: the errno is the call's own, not a leftover
        assertEquals(38, lib.getDeviceList().errno());
    }

    @Test
    void probeStatesThePreciseCause() {
        assumeTrue(NoDevice.libraryInstalled() && NoDevice.kernelHasNoVerbs(), "kernel has verbs support");
        assertEquals(NoDevice.ENOSYS_CAUSE, DeviceProbe.unavailability(VerbsLibrary.load()));
    }

    @Test
    void errnoTextComesFromLibc() {
        assumeTrue(NoDevice.libraryInstalled(), "libibverbs.so.1 is not installed");
        VerbsLibrary lib = VerbsLibrary.load();
        assertEquals("errno 38 (Function not implemented)", lib.describeErrno(38));
        assertEquals("errno 12 (Cannot allocate memory)", lib.describeErrno(12));
    }

    @Test
    void mtuConversions() {
        assertEquals(Verbs.IBV_MTU_4096, VerbsValues.mtuEnum(4096));
        assertEquals(Verbs.IBV_MTU_256, VerbsValues.mtuEnum(256));
        assertEquals(1024, VerbsValues.mtuBytes(Verbs.IBV_MTU_1024));
        assertThrows(IllegalArgumentException.class, () -> VerbsValues.mtuEnum(1500));
        assertThrows(IllegalArgumentException.class, () -> VerbsValues.mtuBytes(6));
    }
}
