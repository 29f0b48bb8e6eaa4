package org.tent4j.metadata.etcd;

import java.net.URI;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.testkit.metadata.MetadataStoreConformance;
import org.tent4j.testkit.servers.EtcdServer;
import org.tent4j.testkit.servers.LoopbackPorts;

class EtcdMetadataStoreConformanceTest extends MetadataStoreConformance {
    private static EtcdServer etcd;

    @BeforeAll
    static void startEtcd() {
        etcd = EtcdServer.launch();
        warmUp(etcd);
    }

    /**
     * Loads gRPC, Netty and Vert.x once with a generous probe timeout, so the first timed open of a test does not pay
     * for class loading on a busy machine.
     */
    static void warmUp(EtcdServer server) {
        new EtcdMetadataStoreProvider().open(URI.create(server.uri()), Map.of("connect-timeout", "60s")).close();
    }

    @AfterAll
    static void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    @Override
    protected MetadataStore open() {
        return provider().open(URI.create(etcd.uri()), Map.of());
    }

    @Override
    protected MetadataStoreProvider provider() {
        return new EtcdMetadataStoreProvider();
    }

    @Override
    protected URI unreachableUri() {
        return URI.create("etcd://127.0.0.1:" + LoopbackPorts.free());
    }

    @Override
    protected Map<String, String> unreachableOptions() {
        return Map.of("connect-timeout", "2s");
    }
}
