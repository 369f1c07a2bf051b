package kiggy.ecosystem;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/** SeqSourceTask is SeqSourceConnector's task. */
public final class SeqSourceTask extends SourceTask {
    private String topic;
    private long count;
    private int batch;
    private long next;
    private Map<String, String> partition;

    @Override
    public void start(Map<String, String> props) {
        AbstractConfig c = new AbstractConfig(SeqSourceConnector.CONFIG, props);
        topic = c.getString(SeqSourceConnector.TOPIC);
        count = c.getLong(SeqSourceConnector.COUNT);
        batch = c.getInt(SeqSourceConnector.BATCH);
        partition = Map.of("seq", topic);
        Map<String, Object> off = context.offsetStorageReader().offset(partition);
        next = off == null ? 0 : ((Number) off.get("next")).longValue();
        System.err.println("SeqSourceTask: starting at " + next + " of " + count);
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        if (next >= count) {
            Thread.sleep(100);
            return null;
        }
        List<SourceRecord> out = new ArrayList<>();
        for (int i = 0; i < batch && next < count; i++, next++) {
            out.add(new SourceRecord(partition, Map.of("next", next + 1), topic, 0,
                Schema.STRING_SCHEMA, "key-" + next, Schema.STRING_SCHEMA, "value-" + next));
        }
        return out;
    }

    @Override
    public void stop() {}

    @Override
    public String version() {
        return "1";
    }
}
