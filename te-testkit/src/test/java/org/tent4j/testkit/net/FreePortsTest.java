package org.tent4j.testkit.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.net.BindException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

class FreePortsTest {
    @Test
    void picksDistinctPorts() throws IOException {
        int[] ports = FreePorts.pick(16);
        assertEquals(16, Arrays.stream(ports).distinct().count(), Arrays.toString(ports));
    }

    @Test
    void aStartThatLostAPortRunsAgainOnFreshOnesAndOtherFailuresAreThrownAtOnce() throws IOException {
        List<int[]> tried = new ArrayList<>();
        String started = FreePorts.startOn(2, ports -> {
            tried.add(ports);
            if (tried.size() == 1) {
                throw new BindException("Address already in use");
            }
            if (tried.size() == 2) {
                // Netty's epoll bind failure is no BindException, only its message says it
                throw new IllegalStateException("bind failed", new IOException("bind(..) failed: Address already in use"));
            }
            return "on " + ports[0];
        });
        assertEquals(3, tried.size());
        assertEquals("on " + tried.get(2)[0], started);

        IllegalArgumentException other = new IllegalArgumentException("bad config");
        int[] calls = {0};
        assertSame(other, assertThrows(IllegalArgumentException.class, () -> FreePorts.startOn(1, ports -> {
            calls[0]++;
            throw other;
        })));
        assertEquals(1, calls[0], "a failure that is not a lost port is not retried");

        calls[0] = 0;
        assertThrows(BindException.class, () -> FreePorts.startOn(1, ports -> {
            calls[0]++;
            throw new BindException("Address already in use");
        }));
        assertEquals(FreePorts.ATTEMPTS, calls[0]);
    }
}
