package org.tent4j.metadata.redis;

import java.net.URI;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.testkit.metadata.MetadataStoreConformance;
import org.tent4j.testkit.servers.LoopbackPorts;
import org.tent4j.testkit.servers.RedisServer;

/** Without authentication; watches use keyspace notifications. */
class RedisMetadataStoreConformanceTest extends MetadataStoreConformance {
    private static RedisServer redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServer.launch();
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    @Override
    protected MetadataStore open() {
        return provider().open(URI.create(redis.uri()), Map.of());
    }

    @Override
    protected MetadataStoreProvider provider() {
        return new RedisMetadataStoreProvider();
    }

    @Override
    protected URI unreachableUri() {
        return URI.create("redis://127.0.0.1:" + LoopbackPorts.free());
    }
}
