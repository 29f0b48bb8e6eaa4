package org.tent4j.store.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The admin port closes a connection whose request has not arrived within a bound: the master's JVM has no other
 * HTTP server that would set one, and the JDK's default is none (a client sending half a request held an admin thread
 * for good). The bound is the JDK's own, read when its first server starts; this checks the master sets it.
 */
class AdminRequestTimeTest {
    @Test
    void theAdminServerBoundsHowLongARequestMayTakeToArrive() throws ClassNotFoundException {
        Class.forName(AdminServer.class.getName(), true, AdminServer.class.getClassLoader());
        assertEquals("30", System.getProperty(AdminServer.REQUEST_TIME_PROPERTY));
    }
}
