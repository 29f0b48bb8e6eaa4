package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.admin.AdminServer;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;

/** A master (and its admin port) that serves every interface without a token says so once, loudly; on loopback it does not. */
class DefaultBindWarningTest {

    private static List<String> warnings(String host, StoreSecurity security) throws Exception {
        Logger rpc = (Logger) LoggerFactory.getLogger(MasterServer.class);
        Logger admin = (Logger) LoggerFactory.getLogger(AdminServer.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        rpc.addAppender(lines);
        admin.addAppender(lines);
        try (MasterServer m = MasterServer.start(new StoreMaster(MasterConfig.defaults(), StoreClock.system()), host, 0, 0,
                r -> { }, security, ClientCredentials.random());
             AdminServer a = AdminServer.start(m, host, 0)) {
            return lines.list.stream().filter(e -> e.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage).toList();
        } finally {
            rpc.detachAppender(lines);
            admin.detachAppender(lines);
        }
    }

    @Test
    void everyInterfaceWithoutATokenIsOneWarningPerPortAndLoopbackNone() throws Exception {
        List<String> open = warnings("0.0.0.0", StoreSecurity.NONE);
        assertEquals(2, open.size(), open.toString());
        assertTrue(open.get(0).contains("has no token: it serves EVERYONE"), open.get(0));
        assertTrue(open.get(1).contains("admin HTTP") && open.get(1).contains("EVERYONE"), open.get(1));

        assertEquals(List.of(), warnings("127.0.0.1", StoreSecurity.NONE));
        List<String> secured = warnings("0.0.0.0", StoreSecurity.NONE.withToken("t".getBytes(StandardCharsets.UTF_8)));
        assertEquals(1, secured.size(), "the admin port has no token of its own: " + secured);
        assertTrue(secured.getFirst().contains("admin HTTP"), secured.getFirst());
    }
}
