/** Downloads per day as a small bar chart: inline SVG, no script, no style attributes (the CSP forbids them). */
export function DownloadChart(props: { days: { day: string; count: number }[] }) {
  const { days } = props;
  const width = 600;
  const height = 120;
  const max = Math.max(1, ...days.map((d) => d.count));
  const bar = width / Math.max(1, days.length);
  const total = days.reduce((n, d) => n + d.count, 0);
  const first = days[0]?.day ?? '';
  const last = days[days.length - 1]?.day ?? '';
  return (
    <figure>
      <svg class="chart" viewBox={`0 0 ${width} ${height + 20}`} width={width} height={height + 20} role="img" aria-label={`${total} downloads from ${first} to ${last}`}>
        {days.map((d, i) => {
          const h = Math.round((d.count / max) * height);
          return (
            <rect x={(i * bar + 1).toFixed(1)} y={height - h} width={Math.max(1, bar - 2).toFixed(1)} height={h}>
              <title>{`${d.day}: ${d.count}`}</title>
            </rect>
          );
        })}
        <text x="0" y={height + 16} font-size="12" fill="#4a5360">{first}</text>
        <text x={width} y={height + 16} font-size="12" fill="#4a5360" text-anchor="end">{last}</text>
      </svg>
      <figcaption class="muted">{`Downloads per day over the last ${days.length} days: ${total} in all.`}</figcaption>
    </figure>
  );
}
