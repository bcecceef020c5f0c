/** The part of autocannon's API the HTTP bench uses (the package ships no types). */
declare module 'autocannon' {
  interface Histogram {
    average: number
    p50: number
    p97_5: number
    p99: number
    total: number
  }
  interface Result {
    requests: Histogram
    latency: Histogram
    errors: number
    timeouts: number
    non2xx: number
    /** Seconds the run actually lasted. */
    duration: number
  }
  interface Options {
    url: string
    method?: 'GET' | 'POST'
    headers?: Record<string, string>
    body?: string
    connections?: number
    pipelining?: number
    duration?: number
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
