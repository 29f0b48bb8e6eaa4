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

/** Against a server that refuses CONFIG (as managed Redis services do): watches fall back to polling. */
class RedisPollingConformanceTest extends MetadataStoreConformance {
    private static RedisServer redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServer.builder().configCommandDisabled().launch();
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    @Override
    protected MetadataStore open() {
        return provider().open(URI.create(redis.uri()), Map.of("watch-poll-interval", "100ms"));
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
