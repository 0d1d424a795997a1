/* stub.c - TEMPORARY stand-in for the report's page and data (src/report/html.h on branch
 * report) until it is merged: a page listing the runs, data counting the windows. */
#include "serve/stub.h"

#include <dirent.h>
#include <string.h>

int tp_html_page(tp_buf *out, const char *data_json, size_t data_len) {
    (void)data_json, (void)data_len;
    tp_buf_puts(out, "<!doctype html><html><head><meta charset=utf-8><title>tprof</title>"
                     "</head><body><ul id=runs></ul><pre id=data></pre><script>"
                     "async function tick(){const r=await (await fetch('api/runs')).json();"
                     "document.getElementById('runs').innerHTML=r.map(x=>'<li>'+x.name+' '+"
                     "x.windows+'</li>').join('');if(r.length){const d=await (await fetch("
                     "'api/data?run='+encodeURIComponent(r[0].name))).text();"
                     "document.getElementById('data').textContent=d;}}"
                     "tick();setInterval(tick,1000);</script></body></html>");
    return 0;
}

int tp_html_data(tp_buf *out, const char *const *inputs, size_t n_inputs, char *err,
                 size_t errlen) {
    (void)err, (void)errlen;
    size_t files = 0;
    for (size_t i = 0; i < n_inputs; i++) {
        DIR *d = opendir(inputs[i]);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            files += e->d_name[0] != '.';
        closedir(d);
    }
    tp_buf_printf(out, "{\"files\":%zu}", files);
    return 0;
}
