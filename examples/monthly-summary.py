# "Summarise last month's sales by region": reads the workspace, writes a summary file, submits the totals.
# execgate run examples/monthly-summary.py --workspace examples/workspace --save-files /tmp/summary
rows = [line.split(',') for line in read_file('sales.csv').strip().split('\n')[1:]]
totals = {}
for month, region, amount in rows:
    totals[region] = round(totals.get(region, 0) + float(amount), 2)
write_file('summary.txt', '\n'.join(f'{region}: {total:.2f}' for region, total in sorted(totals.items())) + '\n')
submit_result({'regions': totals, 'total': round(sum(totals.values()), 2)})
