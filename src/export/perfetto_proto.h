/* perfetto_proto.h - the numbers of Perfetto's TracePacket protocol (protos/perfetto/trace, as
 * perfetto_trace.proto spells them) that tprof uses: field numbers of the messages, and the
 * values of their enums. One list for the writer (export/perfetto.c) and the reader
 * (trace/perfetto_read.c), so that what one writes is what the other expects. Private to those
 * two files: the names are short and unprefixed, as the protocol's own. */
#ifndef TP_EXPORT_PERFETTO_PROTO_H
#define TP_EXPORT_PERFETTO_PROTO_H

enum {
    TRACE_PACKET = 1,
    PK_CHROME_EVENTS = 5, /* TracePacket */
    PK_TIMESTAMP = 8,
    PK_SEQ_ID = 10,
    PK_TRACK_EVENT = 11,
    PK_INTERNED = 12,
    PK_SEQ_FLAGS = 13,
    PK_CLOCK_ID = 58, /* timestamp_clock_id (read, not written) */
    PK_DEFAULTS = 59, /* trace_packet_defaults (read, not written) */
    PK_TRACK_DESC = 60,
    PKD_TRACK_EVENT_DEFAULTS = 11, /* TracePacketDefaults (and PK_CLOCK_ID) */
    TED_TRACK_UUID = 11,           /* TrackEventDefaults */
    SEQ_CLEARED = 1,               /* sequence_flags */
    SEQ_NEEDS_STATE = 2,
    CEB_METADATA = 2, /* ChromeEventBundle */
    CM_NAME = 1,      /* ChromeMetadata */
    CM_JSON = 5,
    TD_UUID = 1, /* TrackDescriptor */
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT = 5,
    TD_COUNTER = 8,
    TD_DESCRIPTION = 14,
    PD_PID = 1, /* ProcessDescriptor */
    PD_NAME = 6,
    THD_PID = 1, /* ThreadDescriptor */
    THD_TID = 2,
    THD_NAME = 5,
    TE_CATEGORY_IIDS = 3, /* TrackEvent */
    TE_ANNOTATIONS = 4,
    TE_TYPE = 9,
    TE_NAME_IID = 10,
    TE_TRACK = 11,
    TE_CATEGORIES = 22, /* inline, as other producers write them (read, not written) */
    TE_NAME = 23,
    TE_EXTRA_COUNTER_VALUES = 12,
    TE_COUNTER_VALUE = 30,
    TE_EXTRA_COUNTER_TRACKS = 31,
    TE_DOUBLE_COUNTER_VALUE = 44,
    TE_EXTRA_DOUBLE_COUNTER_TRACKS = 45,
    TE_EXTRA_DOUBLE_COUNTER_VALUES = 46,
    TE_FLOW_IDS = 47,
    TYPE_BEGIN = 1,
    TYPE_END = 2,
    TYPE_INSTANT = 3,
    TYPE_COUNTER = 4,
    ID_CATEGORIES = 1, /* InternedData, and the iid and name of each entry */
    ID_NAMES = 2,
    ID_ARG_NAMES = 3,
    IE_IID = 1,
    IE_NAME = 2,
    DA_NAME_IID = 1, /* DebugAnnotation */
    DA_BOOL = 2,
    DA_UINT = 3,
    DA_INT = 4,
    DA_DOUBLE = 5,
    DA_STRING = 6,
    DA_POINTER = 7, /* (read: skipped) */
    DA_NESTED = 8,
    DA_JSON = 9,
    DA_NAME = 10, /* inline (read, not written) */
};

#endif
